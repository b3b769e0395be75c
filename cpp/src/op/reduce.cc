// Reductions over axes (axis=None: all), optionally keeping reduced dims:
// sum (any dtype), max/min (numeric), mean/variance (float; variance is the
// population variance, ddof=0).
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// x (a, b, c), axis=[1] -> (a, c); keepdims -> (a, 1, c); axis=None -> ()
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

// As reduce_type, x numeric.
Type numeric_reduce_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  return reduce_type(ctx);
}

// As reduce_type, x float.
Type float_reduce_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  return reduce_type(ctx);
}

void define_reduce(OpRegistry& reg, const char* name, TypeRule rule, FlopRule flops) {
  reg.define(name).set_family("reduce").set_args({"x"})
      .add_attr("axis", AttrKind::kOptIntList, NoneValue{})
      .add_attr("keepdims", AttrKind::kBool, false)
      .set_type_rule(rule).set_flops(flops);
}

}  // namespace

// FLOPs per input element, approximately: sum, max, min one (an add or a
// compare); mean two (the add, plus the final scaling rounded up to one per
// element); variance three (subtract the mean, square, add).
void register_reduce_ops(OpRegistry& reg) {
  define_reduce(reg, "sum", reduce_type, per_input_element_flops<1>);
  define_reduce(reg, "mean", float_reduce_type, per_input_element_flops<2>);
  define_reduce(reg, "max", numeric_reduce_type, per_input_element_flops<1>);
  define_reduce(reg, "min", numeric_reduce_type, per_input_element_flops<1>);
  define_reduce(reg, "variance", float_reduce_type, per_input_element_flops<3>);
}

}  // namespace aj
