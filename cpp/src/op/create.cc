// Creation ops: tensors filled with a value, of a given shape and dtype
// (zeros, ones, full) or of another tensor's shape (zeros_like, ones_like,
// full_like). They have no gradient and cost no FLOPs.
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// shape, dtype -> Tensor(shape, dtype)
Type filled_type(const TypeContext& ctx) {
  return TypeNode::tensor(ctx.attr_shape("shape"), ctx.attr_dtype("dtype"));
}

// x (...), dtype=None -> (...), dtype or x's dtype
Type filled_like_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  return TypeNode::tensor(x.shape(), ctx.attr_opt_dtype("dtype").value_or(x.dtype()));
}

}  // namespace

void register_create_ops(OpRegistry& reg) {
  for (const char* name : {"zeros", "ones"})
    reg.define(name).set_family("create").set_args({})
        .add_attr("shape", AttrKind::kShape).add_attr("dtype", AttrKind::kDType)
        .set_type_rule(filled_type).set_flops(zero_flops).set_differentiable(false);
  reg.define("full").set_family("create").set_args({})
      .add_attr("shape", AttrKind::kShape).add_attr("fill_value", AttrKind::kFloat)
      .add_attr("dtype", AttrKind::kDType)
      .set_type_rule(filled_type).set_flops(zero_flops).set_differentiable(false);
  for (const char* name : {"zeros_like", "ones_like"})
    reg.define(name).set_family("create").set_args({"x"})
        .add_attr("dtype", AttrKind::kOptDType, NoneValue{})
        .set_type_rule(filled_like_type).set_flops(zero_flops).set_differentiable(false);
  reg.define("full_like").set_family("create").set_args({"x"})
      .add_attr("fill_value", AttrKind::kFloat).add_attr("dtype", AttrKind::kOptDType, NoneValue{})
      .set_type_rule(filled_like_type).set_flops(zero_flops).set_differentiable(false);
}

}  // namespace aj
