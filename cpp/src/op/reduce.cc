// Reductions over axes (axis=None: all), optionally keeping reduced dims.
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

Type reduce_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  int64_t n = static_cast<int64_t>(x.ndim());
  auto axes = ctx.attr_opt_ints("axis");
  bool keep = ctx.attr_bool("keepdims");
  std::vector<bool> reduced(n, !axes.has_value());
  if (axes)
    for (auto a : normalize_axes(ctx, *axes, n)) reduced[a] = true;
  Shape out;
  for (int64_t i = 0; i < n; ++i) {
    if (!reduced[i]) out.push_back(x.shape()[i]);
    else if (keep) out.push_back(Dim(1));
  }
  return TypeNode::tensor(std::move(out), x.dtype());
}

// One add per input element.
Dim reduce_flops(const CallNode& call) { return num_elements(call.args()[0]->type()->shape()); }

}  // namespace

void register_reduce_ops(OpRegistry& reg) {
  reg.define("sum").set_family("reduce").set_args({"x"})
      .add_attr("axis", AttrKind::kOptIntList, NoneValue{})
      .add_attr("keepdims", AttrKind::kBool, false)
      .set_type_rule(reduce_type).set_flops(reduce_flops);
}

}  // namespace aj
