// Unary elementwise ops: float math (float32/float64 in, same dtype out),
// sign and magnitude ops that also take ints, and astype (any dtype to any).
#include <utility>

#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// x: float (...) -> (...), same dtype
Type float_unary_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  return ctx.arg_type(0);
}

// x: float or int (...) -> (...), same dtype
Type numeric_unary_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  return ctx.arg_type(0);
}

// x (...) -> (...), dtype from the attr
Type astype_type(const TypeContext& ctx) {
  return TypeNode::tensor(ctx.tensor(0).shape(), ctx.attr_dtype("dtype"));
}

}  // namespace

void register_unary_ops(OpRegistry& reg) {
  const std::pair<const char*, TypeRule> ops[] = {
      {"negative", numeric_unary_type}, {"exp", float_unary_type},  {"log", float_unary_type},
      {"sqrt", float_unary_type},       {"rsqrt", float_unary_type}, {"sin", float_unary_type},
      {"cos", float_unary_type},        {"tanh", float_unary_type},  {"sigmoid", float_unary_type},
      {"relu", numeric_unary_type},     {"gelu", float_unary_type},  {"silu", float_unary_type},
      {"abs", numeric_unary_type},      {"square", numeric_unary_type},
  };
  for (const auto& [name, rule] : ops)
    reg.define(name).set_family("unary").set_args({"x"}).set_type_rule(rule)
        .set_flops(elementwise_flops);
  // One conversion per element. The gradient layer gives no gradient when the
  // source or target dtype is not float.
  reg.define("astype").set_family("unary").set_args({"x"})
      .add_attr("dtype", AttrKind::kDType)
      .set_type_rule(astype_type).set_flops(elementwise_flops);
}

}  // namespace aj
