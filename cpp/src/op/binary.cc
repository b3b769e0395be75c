// Binary elementwise ops with NumPy broadcasting: arithmetic (same dtype in,
// same dtype out) and comparisons (bool out, no gradient).
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// before: x1 (..., a), x2 (..., b) -> broadcast shape, dtype of x1
Type arithmetic_type(const TypeContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  const TypeNode& a = ctx.tensor(0);
  return TypeNode::tensor(broadcast_shapes(ctx, a.shape(), ctx.tensor(1).shape()), a.dtype());
}

Type comparison_type(const TypeContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  return TypeNode::tensor(broadcast_shapes(ctx, ctx.tensor(0).shape(), ctx.tensor(1).shape()),
                          DType::kBool);
}

}  // namespace

void register_binary_ops(OpRegistry& reg) {
  for (const char* name : {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum"})
    reg.define(name).set_family("binary").set_args({"x1", "x2"}).set_type_rule(arithmetic_type)
        .set_flops(elementwise_flops);
  for (const char* name : {"equal", "less", "greater"})
    reg.define(name).set_family("binary").set_args({"x1", "x2"}).set_type_rule(comparison_type)
        .set_flops(elementwise_flops).set_differentiable(false);
}

}  // namespace aj
