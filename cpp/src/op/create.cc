// Creation ops: tensors filled with a value, of a given shape and dtype.
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

Type filled_type(const TypeContext& ctx) {
  return TypeNode::tensor(ctx.attr_shape("shape"), ctx.attr_dtype("dtype"));
}

}  // namespace

void register_create_ops(OpRegistry& reg) {
  for (const char* name : {"zeros", "ones"})
    reg.define(name).set_family("create").set_args({})
        .add_attr("shape", AttrKind::kShape).add_attr("dtype", AttrKind::kDType)
        .set_type_rule(filled_type).set_flops(zero_flops).set_differentiable(false);
}

}  // namespace aj
