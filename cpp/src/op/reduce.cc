// Reductions over axes (axis=None: all), optionally keeping reduced dims:
// sum (any dtype), max/min (numeric), mean/variance (float; variance is the
// population variance, ddof=0), with their type rules, CPU kernels and VJPs.
//
// Kernels follow NumPy: float sums are pairwise (float32 accumulates in
// float32); int sums wrap; a bool sum is a logical or (NumPy's add on bool);
// max/min propagate NaN and reject an empty reduction; the mean of nothing is
// NaN; variance takes two passes (mean, then squared deviations). Every
// kernel walks the input once per pass with reduction_runs, so reducing
// trailing axes sums contiguous rows and reducing leading axes accumulates
// rows into the contiguous output.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "adjoint/autodiff/vjp.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
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

// Which dims of x a reduce call reduces (axis=None: all): the one reading
// of the axis attr once the type rule has checked it.
std::vector<bool> reduced_dims(const CallNode& call) {
  size_t ndim = call.args()[0]->type()->ndim();
  const AttrValue& axis = lookup_attr(call.op(), call.attrs(), "axis");
  auto* axes = std::get_if<std::vector<int64_t>>(&axis);
  std::vector<bool> reduced(ndim, axes == nullptr);
  if (axes)
    for (auto a : *axes) reduced[wrap_axis(a, ndim)] = true;
  return reduced;
}

// ---- kernels ----

// How many input elements reduce into each output element.
int64_t reduced_count(const KernelContext& ctx, const std::vector<bool>& reduced) {
  int64_t n = 1;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) n *= ctx.in(0).shape()[d];
  return n;
}

// a + b as NumPy adds within a dtype: ints wrap, bools or.
template <typename T>
T add(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return a | b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
}

// Sum of x[0, n): pairwise for floats.
template <typename T>
T run_sum(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    return pairwise_sum(0, n, [x](int64_t i) { return x[i]; });
  } else {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s = add(s, x[i]);
    return s;
  }
}

// out = sum of x over the reduced dims.
template <typename T>
void sum_into(const NDArray& x, const std::vector<bool>& reduced, T* out, int64_t out_n) {
  const T* px = x.data_as<T>();
  std::fill(out, out + out_n, T(0));
  reduction_runs(
      x.shape(), reduced, [&](int64_t o, int64_t i, int64_t n) { out[o] = add(out[o], run_sum(px + i, n)); },
      [&](int64_t o, int64_t i, int64_t n) {
        for (int64_t k = 0; k < n; ++k) out[o + k] = add(out[o + k], px[i + k]);
      });
}

void sum_kernel(KernelContext& ctx) {
  auto reduced = reduced_dims(*ctx.call);
  dispatch_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    sum_into(ctx.in(0), reduced, ctx.out().data_as<T>(), ctx.out().numel());
  });
}

void mean_kernel(KernelContext& ctx) {
  auto reduced = reduced_dims(*ctx.call);
  int64_t count = reduced_count(ctx, reduced);
  dispatch_float(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = ctx.out().data_as<T>();
    int64_t out_n = ctx.out().numel();
    sum_into(ctx.in(0), reduced, out, out_n);
    for (int64_t k = 0; k < out_n; ++k) out[k] /= static_cast<T>(count);
  });
}

// Population variance: the mean, then the mean squared deviation from it.
void variance_kernel(KernelContext& ctx) {
  auto reduced = reduced_dims(*ctx.call);
  int64_t count = reduced_count(ctx, reduced);
  dispatch_float(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const NDArray& x = ctx.in(0);
    const T* px = x.data_as<T>();
    T* out = ctx.out().data_as<T>();
    int64_t out_n = ctx.out().numel();
    std::vector<T> mean(out_n);
    sum_into(x, reduced, mean.data(), out_n);
    for (auto& m : mean) m /= static_cast<T>(count);
    std::fill(out, out + out_n, T(0));
    reduction_runs(
        x.shape(), reduced,
        [&](int64_t o, int64_t i, int64_t n) {
          T m = mean[o];
          out[o] += pairwise_sum(i, n, [px, m](int64_t j) { return (px[j] - m) * (px[j] - m); });
        },
        [&](int64_t o, int64_t i, int64_t n) {
          for (int64_t k = 0; k < n; ++k) {
            T d = px[i + k] - mean[o + k];
            out[o + k] += d * d;
          }
        });
    for (int64_t k = 0; k < out_n; ++k) out[k] /= static_cast<T>(count);
  });
}

// max (kMax) or min, propagating NaN; an empty reduction has no identity in
// NumPy, so it fails.
template <bool kMax>
void extremum_kernel(KernelContext& ctx) {
  auto reduced = reduced_dims(*ctx.call);
  if (reduced_count(ctx, reduced) == 0)
    ctx.fail("zero-size reduction: input shape ",
             shape_to_string(Shape(ctx.in(0).shape().begin(), ctx.in(0).shape().end())),
             " has no elements along the reduced axes");
  dispatch_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Lim = std::numeric_limits<T>;
    constexpr T init = kMax ? (Lim::has_infinity ? -Lim::infinity() : Lim::lowest())
                            : (Lim::has_infinity ? Lim::infinity() : Lim::max());
    auto op = [](T a, T b) { return kMax ? nan_max(a, b) : nan_min(a, b); };
    const T* px = ctx.in(0).data_as<T>();
    T* out = ctx.out().data_as<T>();
    std::fill(out, out + ctx.out().numel(), init);
    reduction_runs(
        ctx.in(0).shape(), reduced,
        [&](int64_t o, int64_t i, int64_t n) { out[o] = op(out[o], lane_reduce(px + i, n, init, op)); },
        [&](int64_t o, int64_t i, int64_t n) {
          for (int64_t k = 0; k < n; ++k) out[o + k] = op(out[o + k], px[i + k]);
        });
  });
}

// ---- VJPs ----
//
// Each rule brings g, of the result's shape, back to x's: reshaped to the
// keepdims shape (skipped when broadcasting already lines g up with x), then
// broadcast. Counts of reduced elements are constants unless dims are symbolic.

// The axes of x a reduce call reduces (axis=None: all), ascending.
std::vector<int64_t> reduced_axes(const VJPContext& ctx) {
  std::vector<bool> reduced = reduced_dims(ctx.call);
  std::vector<int64_t> out;
  for (size_t a = 0; a < reduced.size(); ++a)
    if (reduced[a]) out.push_back(static_cast<int64_t>(a));
  return out;
}

// The dims of x that reduce into each result element.
Shape reduced_shape(const VJPContext& ctx) {
  Shape out;
  for (auto a : reduced_axes(ctx)) out.push_back(ctx.arg_type(0).shape()[a]);
  return out;
}

// e (of the result's shape) in the keepdims shape, so that it broadcasts
// against x; as is with keepdims, or when only leading axes are reduced.
Expr unreduce(VJPContext& ctx, const Expr& e) {
  std::vector<int64_t> axes = reduced_axes(ctx);
  bool leading = axes.empty() || axes.back() == static_cast<int64_t>(axes.size()) - 1;
  if (ctx.attr_bool("keepdims") || leading) return e;
  Shape keep = ctx.arg_type(0).shape();
  for (auto a : axes) keep[a] = Dim(1);
  return ctx.make(ops::reshape, {e}, {{"shape", keep}});
}

// sum: g broadcast back to x's shape
std::vector<Expr> sum_vjp(VJPContext& ctx) {
  return {ctx.make(ops::broadcast_to, {unreduce(ctx, ctx.grad)}, {{"shape", ctx.arg_type(0).shape()}})};
}

// mean: g / count broadcast back to x's shape
std::vector<Expr> mean_vjp(VJPContext& ctx) {
  const TypeNode& x = ctx.arg_type(0);
  Expr scaled = ctx.make(ops::multiply, {ctx.grad, count_fraction(ctx, 1.0, reduced_shape(ctx), x.dtype())});
  return {ctx.make(ops::broadcast_to, {unreduce(ctx, scaled)}, {{"shape", x.shape()}})};
}

// max, min: g split evenly among the elements equal to the result:
// mask * g / sum(mask), mask = (x == result)
std::vector<Expr> extremum_vjp(VJPContext& ctx) {
  DType dtype = ctx.arg_type(0).dtype();
  Var mask = ctx.emit(ops::astype, {ctx.make(ops::equal, {ctx.arg(0), unreduce(ctx, ctx.result)})}, {{"dtype", dtype}});
  Expr ties = ctx.make(ops::sum, {mask}, {{"axis", ctx.attr("axis")}, {"keepdims", true}});
  return {ctx.make(ops::multiply, {mask, ctx.make(ops::divide, {unreduce(ctx, ctx.grad), ties})})};
}

// variance: 2 (x - mean(x)) / count * g
std::vector<Expr> variance_vjp(VJPContext& ctx) {
  DType dtype = ctx.arg_type(0).dtype();
  Expr mean = ctx.make(ops::mean, {ctx.arg(0)}, {{"axis", ctx.attr("axis")}, {"keepdims", true}});
  Expr scaled = ctx.make(ops::multiply, {ctx.grad, count_fraction(ctx, 2.0, reduced_shape(ctx), dtype)});
  return {ctx.make(ops::multiply, {ctx.make(ops::subtract, {ctx.arg(0), mean}), unreduce(ctx, scaled)})};
}

OpDef& define_reduce(OpRegistry& reg, OpHandle op, TypeRule rule, FlopRule flops, Kernel kernel,
                     VJPRule vjp, const char* doc) {
  return reg.define(op).set_args({"x"})
      .add_attr("axis", AttrKind::kOptIntList, NoneValue{})
      .add_attr("keepdims", AttrKind::kBool, false)
      .set_type_rule(rule).set_flops(flops).set_kernel(std::move(kernel)).set_vjp(std::move(vjp)).set_doc(doc);
}

}  // namespace

// FLOPs: one per input element for every reduction (an add or a compare);
// the final scaling of mean and variance and variance's second pass are not
// counted.
void register_reduce_ops(OpRegistry& reg) {
  define_reduce(reg, ops::sum, reduce_type, per_input_element_flops<1>, sum_kernel, sum_vjp, R"doc(
Sum of the elements of `x` over the axes `axis`. NumPy: `np.sum(x, axis=tuple(axis), keepdims=keepdims)`. PyTorch: `torch.sum(x, dim=axis, keepdim=keepdims)`.
`axis` lists the axes to reduce (negative axes count from the end; a single int is one axis; `None`, the default, reduces all axes, and an empty list none); `keepdims=True` keeps each reduced axis as a dim of size 1, so that the result broadcasts against `x`.
Unlike NumPy and PyTorch, the result keeps `x`'s dtype: int32 sums stay int32 and wrap, and the sum of a bool tensor is a logical or. Float sums are pairwise (float32 accumulates in float32, as NumPy); the sum of nothing is 0.

Type: `x` may be any tensor; each axis must be in `[-ndim, ndim)` and appear once (else a TypeInferenceError). The result has `x`'s shape without the reduced axes (with them as 1 when `keepdims`), symbolic dims carried over, and `x`'s dtype.
VJP: `grad_x = broadcast_to(unreduce(grad), shape=<x's shape>)`, where `unreduce(e)` is `reshape(e, shape=<x's shape with the reduced axes as 1>)`, left out when `keepdims` is true or only leading axes are reduced, where broadcasting already lines `e` up with `x`.
FLOPs: one per input element (the count is the same for every reduction, the final scaling of `mean` and `variance` and `variance`'s second pass not counted).
Dtypes: all: float32, float64, int32, int64, bool.
)doc");
  define_reduce(reg, ops::mean, float_reduce_type, per_input_element_flops<1>, mean_kernel, mean_vjp, R"doc(
Arithmetic mean of the elements of `x` over the axes `axis`. NumPy: `np.mean(x, axis=tuple(axis), keepdims=keepdims)`. PyTorch: `torch.mean(x, dim=axis, keepdim=keepdims)`.
`axis` lists the axes to reduce (negative axes count from the end; a single int is one axis; `None`, the default, reduces all axes, and an empty list none); `keepdims=True` keeps each reduced axis as a dim of size 1, so that the result broadcasts against `x`.
The kernel sums as `sum` does, then divides by the count; the mean of nothing is NaN. Unlike `np.mean`, an int `x` is refused (cast it with `astype`).

Type: `x` must be float32 or float64; each axis must be in `[-ndim, ndim)` and appear once (else a TypeInferenceError). The result has `x`'s shape without the reduced axes (with them as 1 when `keepdims`), symbolic dims carried over, and `x`'s dtype.
VJP: `grad_x = broadcast_to(unreduce(multiply(grad, 1 / n)), shape=<x's shape>)`, where `n` is the number of elements reduced into each result element, a constant, or `sum(ones(shape=<reduced dims>))` at run time when those dims are symbolic, and `unreduce(e)` is `reshape(e, shape=<x's shape with the reduced axes as 1>)`, left out when `keepdims` is true or only leading axes are reduced, where broadcasting already lines `e` up with `x`.
FLOPs: one per input element (the count is the same for every reduction, the final scaling of `mean` and `variance` and `variance`'s second pass not counted).
Dtypes: float32, float64.
)doc");
  define_reduce(reg, ops::max, numeric_reduce_type, per_input_element_flops<1>, extremum_kernel<true>,
                extremum_vjp, R"doc(
Maximum of the elements of `x` over the axes `axis`. NumPy: `np.max(x, axis=tuple(axis), keepdims=keepdims)`. PyTorch: `torch.amax(x, dim=axis, keepdim=keepdims)`.
`axis` lists the axes to reduce (negative axes count from the end; a single int is one axis; `None`, the default, reduces all axes, and an empty list none); `keepdims=True` keeps each reduced axis as a dim of size 1, so that the result broadcasts against `x`.
A NaN among the reduced elements gives NaN. Reducing zero elements has no identity: it is an ExecutionError at run time (NumPy raises too).

Type: `x` must be numeric (not bool); each axis must be in `[-ndim, ndim)` and appear once (else a TypeInferenceError). The result has `x`'s shape without the reduced axes (with them as 1 when `keepdims`), symbolic dims carried over, and `x`'s dtype.
VJP: the gradient is split evenly among the elements equal to the maximum, as `torch.amax`'s: with `mask = astype(equal(x, unreduce(y)), dtype=<x's dtype>)`, where `y` is the op's result, `grad_x = multiply(mask, divide(unreduce(grad), sum(mask, axis=axis, keepdims=True)))`, where `unreduce(e)` is `reshape(e, shape=<x's shape with the reduced axes as 1>)`, left out when `keepdims` is true or only leading axes are reduced, where broadcasting already lines `e` up with `x`.
FLOPs: one per input element (the count is the same for every reduction, the final scaling of `mean` and `variance` and `variance`'s second pass not counted).
Dtypes: float32, float64, int32, int64.
)doc").set_may_fail();
  define_reduce(reg, ops::min, numeric_reduce_type, per_input_element_flops<1>, extremum_kernel<false>,
                extremum_vjp, R"doc(
Minimum of the elements of `x` over the axes `axis`. NumPy: `np.min(x, axis=tuple(axis), keepdims=keepdims)`. PyTorch: `torch.amin(x, dim=axis, keepdim=keepdims)`.
`axis` lists the axes to reduce (negative axes count from the end; a single int is one axis; `None`, the default, reduces all axes, and an empty list none); `keepdims=True` keeps each reduced axis as a dim of size 1, so that the result broadcasts against `x`.
A NaN among the reduced elements gives NaN. Reducing zero elements has no identity: it is an ExecutionError at run time (NumPy raises too).

Type: `x` must be numeric (not bool); each axis must be in `[-ndim, ndim)` and appear once (else a TypeInferenceError). The result has `x`'s shape without the reduced axes (with them as 1 when `keepdims`), symbolic dims carried over, and `x`'s dtype.
VJP: the gradient is split evenly among the elements equal to the minimum, as `torch.amin`'s: with `mask = astype(equal(x, unreduce(y)), dtype=<x's dtype>)`, where `y` is the op's result, `grad_x = multiply(mask, divide(unreduce(grad), sum(mask, axis=axis, keepdims=True)))`, where `unreduce(e)` is `reshape(e, shape=<x's shape with the reduced axes as 1>)`, left out when `keepdims` is true or only leading axes are reduced, where broadcasting already lines `e` up with `x`.
FLOPs: one per input element (the count is the same for every reduction, the final scaling of `mean` and `variance` and `variance`'s second pass not counted).
Dtypes: float32, float64, int32, int64.
)doc").set_may_fail();
  define_reduce(reg, ops::variance, float_reduce_type, per_input_element_flops<1>, variance_kernel,
                variance_vjp, R"doc(
Population variance (divided by the count, `ddof=0`) of the elements of `x` over the axes `axis`. NumPy: `np.var(x, axis=tuple(axis), keepdims=keepdims)`. PyTorch: `torch.var(x, dim=axis, correction=0, keepdim=keepdims)` (PyTorch's default divides by the count minus one).
`axis` lists the axes to reduce (negative axes count from the end; a single int is one axis; `None`, the default, reduces all axes, and an empty list none); `keepdims=True` keeps each reduced axis as a dim of size 1, so that the result broadcasts against `x`.
The kernel takes two passes: the mean, then the mean squared deviation from it. The variance of nothing is NaN.

Type: `x` must be float32 or float64; each axis must be in `[-ndim, ndim)` and appear once (else a TypeInferenceError). The result has `x`'s shape without the reduced axes (with them as 1 when `keepdims`), symbolic dims carried over, and `x`'s dtype.
VJP: `grad_x = multiply(subtract(x, mean(x, axis=axis, keepdims=True)), unreduce(multiply(grad, 2 / n)))`, where `n` is the number of elements reduced into each result element, a constant, or `sum(ones(shape=<reduced dims>))` at run time when those dims are symbolic, and `unreduce(e)` is `reshape(e, shape=<x's shape with the reduced axes as 1>)`, left out when `keepdims` is true or only leading axes are reduced, where broadcasting already lines `e` up with `x`.
FLOPs: one per input element (the count is the same for every reduction, the final scaling of `mean` and `variance` and `variance`'s second pass not counted).
Dtypes: float32, float64.
)doc").set_may_fail();
}

}  // namespace aj
