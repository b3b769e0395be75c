// Creation ops: tensors filled with a value, of a given shape and dtype
// (zeros, ones, full) or of another tensor's shape (zeros_like, ones_like,
// full_like). They have no gradient and cost no FLOPs. The kernels fill the
// output (the _like ops never read x); an integer fill_value must fit its
// dtype after truncation, which the type rules check.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "adjoint/runtime/block_kernel.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
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

// An integer dtype takes fill_value truncated toward zero (NumPy's cast), so
// that must be in range (NaN and infinities are not); bool takes any value.
Type require_fill_fits(const TypeContext& ctx, Type t) {
  double v = ctx.attr_float("fill_value");
  if (!is_int(t->dtype())) return t;
  double hi = t->dtype() == DType::kInt32 ? 2147483648.0 : 9223372036854775808.0;
  double whole = std::trunc(v);
  if (!(whole >= -hi && whole < hi))
    ctx.fail("fill_value ", attr_to_string(ctx.attr("fill_value")), " is out of range for dtype ",
             dtype_name(t->dtype()));
  return t;
}

// shape, fill_value, dtype -> Tensor(shape, dtype)
Type full_type(const TypeContext& ctx) { return require_fill_fits(ctx, filled_type(ctx)); }

// x (...), fill_value, dtype=None -> (...), dtype or x's dtype
Type full_like_type(const TypeContext& ctx) { return require_fill_fits(ctx, filled_like_type(ctx)); }

// `v` as a T: nonzero is true for bool; the type rule checked integer range.
template <typename T>
T fill_cast(double v) {
  if constexpr (std::is_same_v<T, uint8_t>) return T(v != 0.0);
  else return static_cast<T>(v);
}

void fill(NDArray& out, double v) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(out.data_as<T>(), out.numel(), fill_cast<T>(v));
  });
}

// Zero is all zero bytes in every dtype.
void zeros_kernel(KernelContext& ctx) {
  if (ctx.out().nbytes() != 0) std::memset(ctx.out().data(), 0, ctx.out().nbytes());
}
void ones_kernel(KernelContext& ctx) { fill(ctx.out(), 1.0); }
void full_kernel(KernelContext& ctx) { fill(ctx.out(), ctx.attr_float("fill_value")); }

// zeros_like and ones_like in a fused group (runtime/fusion.cc): the block is
// filled and x never read, so relu's VJP, where(x > 0, g, zeros_like(g)),
// makes one pass with no zeroed buffer in memory.
template <int kValue>
BlockFn fill_like_block(const CallNode& call) {
  return dispatch_dtype(call.type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    return [](const BlockArgs& args) { std::fill_n(static_cast<T*>(args.out), args.n, fill_cast<T>(kValue)); };
  });
}

}  // namespace

void register_create_ops(OpRegistry& reg) {
  struct Filled {
    OpHandle op;
    Kernel kernel;
    const char* doc;  // the op's reference text (OpDef::doc)
    BlockRule block = nullptr;  // for the _like ops, which fuse
  };
  const Filled filled[] = {
      {ops::zeros, zeros_kernel, R"doc(
A tensor of zeros of the shape `shape` and the dtype `dtype`. NumPy: `np.zeros(shape, dtype)`. PyTorch: `torch.zeros(shape, dtype=dtype)`.
It takes no tensor argument: `aj.op.zeros(...)` emits into the innermost active `FunctionBuilder`.

Type: `shape` is the result's shape: ints from 0 up or symbolic dims (a negative dim is a TypeInferenceError); `dtype` its dtype. The result is `Tensor(shape, dtype)`.
VJP: none (not differentiable: the result is a constant).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::ones, ones_kernel, R"doc(
A tensor of ones of the shape `shape` and the dtype `dtype` (true for bool). NumPy: `np.ones(shape, dtype)`. PyTorch: `torch.ones(shape, dtype=dtype)`.
It takes no tensor argument: `aj.op.ones(...)` emits into the innermost active `FunctionBuilder`.

Type: `shape` is the result's shape: ints from 0 up or symbolic dims (a negative dim is a TypeInferenceError); `dtype` its dtype. The result is `Tensor(shape, dtype)`.
VJP: none (not differentiable: the result is a constant).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
  };
  for (const auto& [op, kernel, doc, block] : filled)
    reg.define(op).set_args({})
        .add_attr("shape", AttrKind::kShape).add_attr("dtype", AttrKind::kDType)
        .set_type_rule(filled_type).set_flops(zero_flops).set_differentiable(false)
        .set_kernel(kernel).set_doc(doc);
  reg.define(ops::full).set_args({})
      .add_attr("shape", AttrKind::kShape).add_attr("fill_value", AttrKind::kFloat)
      .add_attr("dtype", AttrKind::kDType)
      .set_type_rule(full_type).set_flops(zero_flops).set_differentiable(false)
      .set_kernel(full_kernel).set_doc(R"doc(
A tensor of the shape `shape` and the dtype `dtype` with every element `fill_value`. NumPy: `np.full(shape, fill_value, dtype)`. PyTorch: `torch.full(shape, fill_value, dtype=dtype)`.
`fill_value` is a float attr: an int dtype takes it truncated toward zero (NumPy's cast), and it must then be in the dtype's range, so NaN and infinities are refused; bool takes `fill_value != 0`. Values past `2**53` are not exact, since the attr is a float64. It takes no tensor argument: `aj.op.full(...)` emits into the innermost active `FunctionBuilder`. TVM Relax's `full` takes `fill_value` as a tensor argument; here it is an attr, known when the program is built.

Type: `shape` is the result's shape: ints from 0 up or symbolic dims (a negative dim is a TypeInferenceError); `dtype` its dtype. The result is `Tensor(shape, dtype)`. A `fill_value` out of an int dtype's range is a TypeInferenceError.
VJP: none (not differentiable: the result is a constant).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc");
  const Filled filled_like[] = {
      {ops::zeros_like, zeros_kernel, R"doc(
A tensor of zeros of `x`'s shape, of the dtype `dtype` (`None`, the default: `x`'s dtype). NumPy: `np.zeros_like(x, dtype=dtype)`. PyTorch: `torch.zeros_like(x, dtype=dtype)`.
The kernel never reads `x`'s elements.

Type: `x` may be any tensor; the result has its shape, symbolic dims included, and the dtype `dtype` or `x`'s.
VJP: none (not differentiable: the result does not depend on the values of `x`, so `x` gets no gradient through it).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc", fill_like_block<0>},
      {ops::ones_like, ones_kernel, R"doc(
A tensor of ones of `x`'s shape, of the dtype `dtype` (`None`, the default: `x`'s dtype). NumPy: `np.ones_like(x, dtype=dtype)`. PyTorch: `torch.ones_like(x, dtype=dtype)`.
The kernel never reads `x`'s elements.

Type: `x` may be any tensor; the result has its shape, symbolic dims included, and the dtype `dtype` or `x`'s.
VJP: none (not differentiable: the result does not depend on the values of `x`, so `x` gets no gradient through it).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc", fill_like_block<1>},
  };
  for (const auto& [op, kernel, doc, block] : filled_like)
    reg.define(op).set_args({"x"})
        .add_attr("dtype", AttrKind::kOptDType, NoneValue{})
        .set_type_rule(filled_like_type).set_flops(zero_flops).set_differentiable(false)
        .set_kernel(kernel).set_block(block).set_doc(doc);
  reg.define(ops::full_like).set_args({"x"})
      .add_attr("fill_value", AttrKind::kFloat).add_attr("dtype", AttrKind::kOptDType, NoneValue{})
      .set_type_rule(full_like_type).set_flops(zero_flops).set_differentiable(false)
      .set_kernel(full_kernel).set_doc(R"doc(
A tensor of `x`'s shape with every element `fill_value`, of the dtype `dtype` (`None`, the default: `x`'s dtype). NumPy: `np.full_like(x, fill_value, dtype=dtype)`. PyTorch: `torch.full_like(x, fill_value, dtype=dtype)`.
`fill_value` is a float attr: an int dtype takes it truncated toward zero (NumPy's cast), and it must then be in the dtype's range, so NaN and infinities are refused; bool takes `fill_value != 0`. Values past `2**53` are not exact, since the attr is a float64. The kernel never reads `x`'s elements. TVM Relax's `full_like` takes `fill_value` as a tensor argument; here it is an attr.

Type: `x` may be any tensor; the result has its shape, symbolic dims included, and the dtype `dtype` or `x`'s. A `fill_value` out of an int dtype's range is a TypeInferenceError.
VJP: none (not differentiable: the result does not depend on the values of `x`, so `x` gets no gradient through it).
FLOPs: zero (a fill is data movement).
Dtypes: all: float32, float64, int32, int64, bool.
)doc");
}

}  // namespace aj
