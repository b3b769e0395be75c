// Unary elementwise ops: float math (float32/float64 in, same dtype out; erf
// included, for gelu's gradient), sign and magnitude ops that also take ints,
// and astype (any dtype to any); each with its type rule, CPU kernel and VJP.
//
// Kernel semantics are NumPy's (PyTorch's for the activations), with:
//   - ints wrap: negative/abs of INT_MIN is INT_MIN, square wraps;
//   - sigmoid = 1 / (1 + exp(-x)), computed from exp(-|x|) so that it neither
//     overflows nor loses the small tail for large |x|;
//   - gelu is the exact form 0.5 * x * (1 + erf(x / sqrt(2))), computed as
//     x * Phi(x) with Phi's tail (x < 0) to full relative precision;
//   - gelu and silu give 0 at -inf (their limit, where x * 0 would be NaN);
//   - relu keeps NaN (as np.maximum(x, 0)); rsqrt = 1 / sqrt(x);
//   - astype as NumPy's (see convert_value): float to int truncates toward
//     zero, saturates out of range, NaN gives 0; to bool is != 0.
// float32 exp, tanh, sigmoid, silu, gelu and erf use branch-free
// approximations that vectorize (relative error < 5e-7); float64 calls libm
// (see exp_of).
#include <cmath>

#include "adjoint/autodiff/vjp.h"
#include "adjoint/runtime/block_kernel.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
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

constexpr double kSqrtHalf = 0.70710678118654752440;

// exp for the activations: vec_exp for float, which then vectorizes; libm
// for double, since on the baseline x86-64 ISA (SSE2) double selects do not
// vectorize and the inlined vec_exp is slower than the call.
template <typename T>
[[gnu::always_inline]] inline T exp_of(T x) {
  if constexpr (sizeof(T) == 4) return vec_exp(x);
  else return std::exp(x);
}

template <typename T>
[[gnu::always_inline]] inline T sigmoid(T x) {
  T e = exp_of(-std::abs(x));
  T r = T(1) / (T(1) + e);
  return blend(x >= T(0), r, e * r);
}

// float: tanh(x) = 1 - 2 / (exp(2|x|) + 1) with the sign of x, and below
// |x| = 0.3, where that cancels, the odd Taylor polynomial to x^11 (the next
// term is < 2e-9 x). double: libm.
template <typename T>
[[gnu::always_inline]] inline T tanh_of(T x) {
  if constexpr (sizeof(T) == 8) {
    return std::tanh(x);
  } else {
    T a = std::abs(x), s = x * x;
    T big = T(1) - T(2) / (vec_exp(T(2) * a) + T(1));
    T small = a + a * s * (T(-1.0 / 3) + s * (T(2.0 / 15) + s * (T(-17.0 / 315) + s * (T(62.0 / 2835) +
              s * T(-1382.0 / 155925)))));
    return std::copysign(blend(a < T(0.3), small, big), x);
  }
}

// erfc(a) exp(a^2) / t at t = 1 / (1 + 0.375 a), a >= 0 (float): P was
// fitted (least squares reweighted to minimax relative error) to it over a
// in [0, 10.5], past which erfc(a) is 0 in float; its relative error is 2e-8.
template <typename T>
[[gnu::always_inline]] inline T erfc_scaled(T t) {
  T p = T(0.0609653322f);
  for (T c : {-0.284637049f, 0.427020882f, -0.223464479f, 0.269746387f, 0.12314839f, 0.204904731f,
              0.210705527f, 0.211610265f})
    p = p * t + c;
  return p;
}

// exp(-k m^2) = head * tail for 0 <= m <= 16, k = 1/2 or 1 (float): h is m
// to 12 bits, so h^2 is exact, head = exp(-k h^2) and tail = exp(-d) for
// d = k (m - h)(m + h) < 0.09 by its Taylor polynomial. Rounding m^2
// instead would cost 2 k m^2 ulp (1e-5 at m = 13).
template <typename T>
struct ExpNegSquare {
  T head, tail;
};
template <typename T>
[[gnu::always_inline]] inline ExpNegSquare<T> exp_neg_square(T m, T k) {
  T h = from_bits<T>(bits_of(m) & 0xFFFFF000u);
  T d = (m - h) * (m + h) * k;
  return {vec_exp(-h * h * k), T(1) - d * (T(1) - d * T(0.5) * (T(1) - d * T(1.0 / 3) * (T(1) - d * T(0.25))))};
}

// Phi(x) = P(N(0, 1) <= x) = erfc(-x / sqrt(2)) / 2. double: libm's erfc.
// float: q = erfc(a) / 2 for a = |x| / sqrt(2) with relative precision (the
// tail that x * Phi(x) keeps for negative x), then Phi = q for x <= 0 and
// 1 - q above; erfc(a) = t P(t) exp(-x^2 / 2) with the split taken on |x|
// itself (clamped at 16, past which it is 0), so a is never rounded. Its
// relative error in float arithmetic is below 5e-7.
template <typename T>
[[gnu::always_inline]] inline T normal_cdf(T x) {
  if constexpr (sizeof(T) == 8) {
    return T(0.5) * std::erfc(-x * T(kSqrtHalf));
  } else {
    T ax = std::abs(x), t = T(1) / (T(1) + T(0.375 * kSqrtHalf) * ax);
    ExpNegSquare<T> e = exp_neg_square(blend(ax < T(16), ax, T(16)), T(0.5));
    T q = T(0.5) * t * erfc_scaled(t) * e.head * e.tail;
    return blend(x > T(0), T(1) - q, q);
  }
}

// erf. double: libm. float: below |x| = 1, x + x q(x^2) with q the Taylor
// series of erf(x) / x - 1 to x^22 (the next term is < 1e-10 x); above,
// 1 - erfc(|x|) with the sign of x, erfc as in normal_cdf (clamped at 11,
// past which erf is 1 in float). Within 1.6 ulp of erf over all floats
// (libm's erff: 1 ulp), and it vectorizes.
template <typename T>
[[gnu::always_inline]] inline T erf_of(T x) {
  if constexpr (sizeof(T) == 8) {
    return std::erf(x);
  } else {
    T a = std::abs(x), s = x * x;
    T q = T(-1.22905553e-09f);
    for (T c : {1.48071928e-08f, -1.63658447e-07f, 1.64621144e-06f, -1.49256504e-05f, 0.00012055333f,
                -0.000854832702f, 0.00522397763f, -0.0268661706f, 0.112837917f, -0.376126389f, 0.128379167f})
      q = q * s + c;
    T t = T(1) / (T(1) + T(0.375) * a);
    ExpNegSquare<T> e = exp_neg_square(blend(a < T(11), a, T(11)), T(1));
    T big = T(1) - t * erfc_scaled(t) * e.head * e.tail;
    return blend(a < T(1), x + x * q, std::copysign(big, x));
  }
}

// The ops, each a functor on its element types.
struct Negative { template <typename T> T operator()(T x) const { return wrap_neg(x); } };
struct Exp { template <typename T> T operator()(T x) const { return exp_of(x); } };
struct Log { template <typename T> T operator()(T x) const { return std::log(x); } };
struct Log1p { template <typename T> T operator()(T x) const { return std::log1p(x); } };
struct Sqrt { template <typename T> T operator()(T x) const { return std::sqrt(x); } };
struct Rsqrt { template <typename T> T operator()(T x) const { return T(1) / std::sqrt(x); } };
struct Sin { template <typename T> T operator()(T x) const { return std::sin(x); } };
struct Cos { template <typename T> T operator()(T x) const { return std::cos(x); } };
struct Tanh { template <typename T> T operator()(T x) const { return tanh_of(x); } };
struct Sigmoid { template <typename T> T operator()(T x) const { return sigmoid(x); } };
struct Relu { template <typename T> T operator()(T x) const { return x < T(0) ? T(0) : x; } };
struct Erf { template <typename T> T operator()(T x) const { return erf_of(x); } };
struct Square { template <typename T> T operator()(T x) const { return wrap_mul(x, x); } };

struct Abs {
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x);  // abs(-0.0) = 0.0
    else return x < T(0) ? wrap_neg(x) : x;
  }
};
struct Gelu {
  template <typename T> T operator()(T x) const {
    T p = normal_cdf(x);
    return blend(p == T(0), T(0), x * p);
  }
};
struct Silu {
  template <typename T> T operator()(T x) const {
    T s = sigmoid(x);
    return blend(s == T(0), T(0), x * s);
  }
};

// y[i] = Op(x[i]), compiled twice (AVX2 and baseline) and picked at load time.
template <typename T, typename Op>
AJ_MULTIVERSION void map_span(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Op{}(x[i]);
}

template <typename Op>
void float_kernel(KernelContext& ctx) {
  dispatch_float(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = ctx.in(0).data_as<T>();
    T* y = ctx.out().data_as<T>();
    parallel_for(ctx.out().numel(), kParallelGrain, [&](int64_t b, int64_t e) { map_span<T, Op>(x + b, y + b, e - b); });
  });
}

template <typename Op>
void numeric_kernel(KernelContext& ctx) {
  dispatch_numeric(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary_map<T, T>(ctx.in(0), ctx.out(), Op{});
  });
}

template <typename O>
struct ConvertTo {
  template <typename I> O operator()(I x) const { return convert_value<O, I>(x); }
};

void astype_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.in(0).dtype(), [&](auto in_tag) {
    using I = typename decltype(in_tag)::type;
    dispatch_dtype(ctx.out().dtype(), [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      unary_map<O, I>(ctx.in(0), ctx.out(), ConvertTo<O>{});
    });
  });
}

// The block functions of fusion (runtime/block_kernel.h), by the call's
// dtypes, with the kernels' functors.
template <typename Op>
BlockFn float_block(const CallNode& call) {
  return dispatch_dtype(call.type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) return unary_block<T, T, Op>;
    else return nullptr;
  });
}

template <typename Op>
BlockFn numeric_block(const CallNode& call) {
  return dispatch_dtype(call.type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t>) return nullptr;
    else return unary_block<T, T, Op>;
  });
}

BlockFn astype_block(const CallNode& call) {
  return dispatch_dtype(call.args()[0]->type()->dtype(), [&](auto in_tag) {
    using I = typename decltype(in_tag)::type;
    return dispatch_dtype(call.type()->dtype(), [](auto out_tag) -> BlockFn {
      using O = typename decltype(out_tag)::type;
      return unary_block<O, I, ConvertTo<O>>;
    });
  });
}


// ---- VJPs: g is the adjoint of y = op(x) ----

Expr times(VJPContext& ctx, Expr a, Expr b) { return ctx.make(ops::multiply, {std::move(a), std::move(b)}); }
Expr scalar_of(VJPContext& ctx, double v) { return ctx.scalar(v, ctx.arg_type(0).dtype()); }

// negative: -g
std::vector<Expr> negative_vjp(VJPContext& ctx) { return {ctx.make(ops::negative, {ctx.grad})}; }
// exp: g * y
std::vector<Expr> exp_vjp(VJPContext& ctx) { return {times(ctx, ctx.grad, ctx.result)}; }
// log: g / x
std::vector<Expr> log_vjp(VJPContext& ctx) { return {ctx.make(ops::divide, {ctx.grad, ctx.arg(0)})}; }
// log1p: g / (1 + x)
std::vector<Expr> log1p_vjp(VJPContext& ctx) {
  return {ctx.make(ops::divide, {ctx.grad, ctx.make(ops::add, {ctx.arg(0), scalar_of(ctx, 1.0)})})};
}
// sqrt: g / (2 y)
std::vector<Expr> sqrt_vjp(VJPContext& ctx) {
  return {ctx.make(ops::divide, {ctx.grad, times(ctx, ctx.result, scalar_of(ctx, 2.0))})};
}
// rsqrt: -g y / (2 x)
std::vector<Expr> rsqrt_vjp(VJPContext& ctx) {
  return {ctx.make(ops::divide, {times(ctx, ctx.grad, ctx.result), times(ctx, ctx.arg(0), scalar_of(ctx, -2.0))})};
}
// sin: g cos(x)
std::vector<Expr> sin_vjp(VJPContext& ctx) { return {times(ctx, ctx.grad, ctx.make(ops::cos, {ctx.arg(0)}))}; }
// cos: -g sin(x)
std::vector<Expr> cos_vjp(VJPContext& ctx) {
  return {times(ctx, ctx.grad, ctx.make(ops::negative, {ctx.make(ops::sin, {ctx.arg(0)})}))};
}
// tanh: g (1 - y^2)
std::vector<Expr> tanh_vjp(VJPContext& ctx) {
  return {times(ctx, ctx.grad, ctx.make(ops::subtract, {scalar_of(ctx, 1.0), ctx.make(ops::square, {ctx.result})}))};
}
// sigmoid: g y (1 - y)
std::vector<Expr> sigmoid_vjp(VJPContext& ctx) {
  Expr one_minus = ctx.make(ops::subtract, {scalar_of(ctx, 1.0), ctx.result});
  return {times(ctx, ctx.grad, times(ctx, ctx.result, one_minus))};
}
// relu: g where y > 0 (the same as x > 0, NaN included), else 0. Reading the
// result rather than x, as PyTorch's threshold_backward does, lets x die in
// the forward pass: a fused bias add + relu then writes only y.
std::vector<Expr> relu_vjp(VJPContext& ctx) {
  Expr positive = ctx.make(ops::greater, {ctx.result, scalar_of(ctx, 0.0)});
  return {ctx.make(ops::where, {positive, ctx.grad, ctx.make(ops::zeros_like, {ctx.grad})})};
}
// erf: g 2 / sqrt(pi) exp(-x^2)
std::vector<Expr> erf_vjp(VJPContext& ctx) {
  Expr e = ctx.make(ops::exp, {ctx.make(ops::negative, {ctx.make(ops::square, {ctx.arg(0)})})});
  return {times(ctx, ctx.grad, times(ctx, e, scalar_of(ctx, 1.1283791670955126)))};
}
// gelu: g (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x / sqrt(2))) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
std::vector<Expr> gelu_vjp(VJPContext& ctx) {
  const Expr& x = ctx.arg(0);
  Expr erf = ctx.make(ops::erf, {times(ctx, x, scalar_of(ctx, kSqrtHalf))});
  Expr cdf = times(ctx, ctx.make(ops::add, {erf, scalar_of(ctx, 1.0)}), scalar_of(ctx, 0.5));
  Expr pdf = times(ctx, ctx.make(ops::exp, {times(ctx, ctx.make(ops::square, {x}), scalar_of(ctx, -0.5))}),
                   scalar_of(ctx, 0.3989422804014327));
  return {times(ctx, ctx.grad, ctx.make(ops::add, {cdf, times(ctx, x, pdf)}))};
}
// silu: g s (1 + x (1 - s)), s = sigmoid(x)
std::vector<Expr> silu_vjp(VJPContext& ctx) {
  Var s = ctx.emit(ops::sigmoid, {ctx.arg(0)});
  Expr inner = ctx.make(ops::add, {scalar_of(ctx, 1.0), times(ctx, ctx.arg(0), ctx.make(ops::subtract, {scalar_of(ctx, 1.0), s}))});
  return {times(ctx, ctx.grad, times(ctx, s, inner))};
}
// abs: -g where x < 0, else g
std::vector<Expr> abs_vjp(VJPContext& ctx) {
  Expr negative = ctx.make(ops::less, {ctx.arg(0), scalar_of(ctx, 0.0)});
  return {ctx.make(ops::where, {negative, ctx.make(ops::negative, {ctx.grad}), ctx.grad})};
}
// square: 2 x g
std::vector<Expr> square_vjp(VJPContext& ctx) {
  return {times(ctx, ctx.grad, times(ctx, ctx.arg(0), scalar_of(ctx, 2.0)))};
}
// astype: g cast back to x's dtype; no gradient to a non-float x
std::vector<Expr> astype_vjp(VJPContext& ctx) {
  DType from = ctx.arg_type(0).dtype();
  if (!is_float(from)) return {nullptr};
  return {ctx.make(ops::astype, {ctx.grad}, {{"dtype", from}})};
}

struct UnaryOp {
  OpHandle op;
  TypeRule rule;
  Kernel kernel;
  BlockRule block;  // the kernel's work on one block, for fusion
  VJPRule vjp;
  const char* doc;  // the op's reference text (OpDef::doc)
};

}  // namespace

void register_unary_ops(OpRegistry& reg) {
  const UnaryOp unary_ops[] = {
      {ops::negative, numeric_unary_type, numeric_kernel<Negative>, numeric_block<Negative>, negative_vjp, R"doc(
Elementwise negation, `-x`. NumPy: `np.negative(x)`. PyTorch: `torch.neg(x)`.
Integers wrap: the negative of the smallest int32 or int64 is itself, as in NumPy.

Type: `x` must be a numeric tensor (not bool); the result has its shape and dtype. A bool `x` is a TypeInferenceError (NumPy refuses it too).
VJP: `grad_x = negative(grad)`.
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::exp, float_unary_type, float_kernel<Exp>, float_block<Exp>, exp_vjp, R"doc(
Elementwise exponential, e to the power `x`. NumPy: `np.exp(x)`. PyTorch: `torch.exp(x)`.
float32 uses a branch-free approximation that vectorizes (relative error below 5e-7; `exp(-inf) = 0`, `exp(inf) = inf`, NaN stays NaN); float64 calls the C library's `exp`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError (cast it with `astype` first).
VJP: `grad_x = multiply(grad, y)`, where `y = exp(x)` is the op's result.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::log, float_unary_type, float_kernel<Log>, float_block<Log>, log_vjp, R"doc(
Elementwise natural logarithm. NumPy: `np.log(x)`. PyTorch: `torch.log(x)`.
`log(0) = -inf`; a negative `x` gives NaN.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = divide(grad, x)`.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::log1p, float_unary_type, float_kernel<Log1p>, float_block<Log1p>, log1p_vjp, R"doc(
Elementwise `log(1 + x)`, exact for small `x` where `log(add(x, 1))` rounds `1 + x` first (`log1p(1e-10)` is `1e-10`; `log(1 + 1e-10)` is 0 in float32). NumPy: `np.log1p(x)`. PyTorch: `torch.log1p(x)`.
`log1p(-1) = -inf`; `x < -1` gives NaN. Both dtypes call the C library's `log1p`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = divide(grad, add(x, 1))`.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::sqrt, float_unary_type, float_kernel<Sqrt>, float_block<Sqrt>, sqrt_vjp, R"doc(
Elementwise square root. NumPy: `np.sqrt(x)`. PyTorch: `torch.sqrt(x)`.
A negative `x` gives NaN.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = divide(grad, multiply(y, 2))`, where `y = sqrt(x)` is the op's result.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::rsqrt, float_unary_type, float_kernel<Rsqrt>, float_block<Rsqrt>, rsqrt_vjp, R"doc(
Elementwise reciprocal square root, `1 / sqrt(x)`. NumPy: `1 / np.sqrt(x)`. PyTorch: `torch.rsqrt(x)`.
`rsqrt(0) = inf`; a negative `x` gives NaN.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = divide(multiply(grad, y), multiply(x, -2))`, where `y = rsqrt(x)` is the op's result (that is, `-grad * x ** -1.5 / 2`).
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::sin, float_unary_type, float_kernel<Sin>, float_block<Sin>, sin_vjp, R"doc(
Elementwise sine (radians). NumPy: `np.sin(x)`. PyTorch: `torch.sin(x)`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, cos(x))`.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::cos, float_unary_type, float_kernel<Cos>, float_block<Cos>, cos_vjp, R"doc(
Elementwise cosine (radians). NumPy: `np.cos(x)`. PyTorch: `torch.cos(x)`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, negative(sin(x)))`.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::tanh, float_unary_type, float_kernel<Tanh>, float_block<Tanh>, tanh_vjp, R"doc(
Elementwise hyperbolic tangent. NumPy: `np.tanh(x)`. PyTorch: `torch.tanh(x)`.
float32 computes `1 - 2 / (exp(2|x|) + 1)` with the sign of `x`, and its odd Taylor polynomial below `|x| = 0.3` where that form cancels (relative error below 5e-7); float64 calls the C library's `tanh`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, subtract(1, square(y)))`, where `y = tanh(x)` is the op's result.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::sigmoid, float_unary_type, float_kernel<Sigmoid>, float_block<Sigmoid>, sigmoid_vjp, R"doc(
Elementwise logistic function, `1 / (1 + exp(-x))`. NumPy: none (SciPy's `scipy.special.expit(x)`). PyTorch: `torch.sigmoid(x)`.
It is computed from `exp(-|x|)`, so it neither overflows nor loses the small tail for large `|x|`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, multiply(y, subtract(1, y)))`, where `y = sigmoid(x)` is the op's result.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::relu, numeric_unary_type, numeric_kernel<Relu>, numeric_block<Relu>, relu_vjp, R"doc(
Elementwise rectified linear unit, `x` where `x >= 0`, else 0. NumPy: `np.maximum(x, 0)`. PyTorch: `torch.relu(x)`.
NaN stays NaN (as both of those give). Integer tensors are accepted too.

Type: `x` must be a numeric tensor (not bool); the result has its shape and dtype. A bool `x` is a TypeInferenceError.
VJP: `grad_x = where(greater(y, 0), grad, zeros_like(grad))` with `y = relu(x)` (`y > 0` exactly where `x > 0`; reading `y` lets `x` be freed after the forward pass, as PyTorch's `threshold_backward` does): the gradient at `x = 0` (and at NaN) is 0, PyTorch's choice too.
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::gelu, float_unary_type, float_kernel<Gelu>, float_block<Gelu>, gelu_vjp, R"doc(
Elementwise Gaussian error linear unit in its exact form, `x * Phi(x)` with `Phi(x) = (1 + erf(x / sqrt(2))) / 2` the standard normal CDF. NumPy: none. PyTorch: `torch.nn.functional.gelu(x)` (its default `approximate="none"`; there is no tanh approximation here).
`Phi` keeps its tail to full relative precision for negative `x`, and `gelu(-inf) = 0` (its limit, where `x * Phi(x)` would be NaN). float32 uses a fitted approximation of `Phi` (relative error below 5e-7); float64 calls the C library's `erfc`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, add(cdf, multiply(x, pdf)))` with `cdf = multiply(add(erf(multiply(x, 0.7071067811865476)), 1), 0.5)` and `pdf = multiply(exp(multiply(square(x), -0.5)), 0.3989422804014327)` (the normal CDF and density at `x`).
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::silu, float_unary_type, float_kernel<Silu>, float_block<Silu>, silu_vjp, R"doc(
Elementwise sigmoid linear unit (swish), `x * sigmoid(x)`. NumPy: none (`x / (1 + np.exp(-x))`). PyTorch: `torch.nn.functional.silu(x)`.
`silu(-inf) = 0` (its limit, where `x * sigmoid(x)` would be NaN).

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, multiply(s, add(1, multiply(x, subtract(1, s)))))` with `s = sigmoid(x)`.
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
      {ops::abs, numeric_unary_type, numeric_kernel<Abs>, numeric_block<Abs>, abs_vjp, R"doc(
Elementwise absolute value. NumPy: `np.abs(x)`. PyTorch: `torch.abs(x)`.
`abs(-0.0) = 0.0`; integers wrap: the absolute value of the smallest int32 or int64 is itself, as in NumPy.

Type: `x` must be a numeric tensor (not bool); the result has its shape and dtype. A bool `x` is a TypeInferenceError.
VJP: `grad_x = where(less(x, 0), negative(grad), grad)`: at `x = 0` the gradient passes unchanged (PyTorch gives 0 there).
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::square, numeric_unary_type, numeric_kernel<Square>, numeric_block<Square>, square_vjp, R"doc(
Elementwise square, `x * x`. NumPy: `np.square(x)`. PyTorch: `torch.square(x)`.
Integers wrap on overflow.

Type: `x` must be a numeric tensor (not bool); the result has its shape and dtype. A bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, multiply(x, 2))`.
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::erf, float_unary_type, float_kernel<Erf>, float_block<Erf>, erf_vjp, R"doc(
Elementwise Gauss error function. NumPy: none (SciPy's `scipy.special.erf(x)`). PyTorch: `torch.erf(x)`.
It is here for the gradient of `gelu`. float32 uses an approximation that vectorizes, within 1.6 ulp of `erf` (the C library's `erff`: 1 ulp); float64 calls the C library's `erf`.

Type: `x` must be float32 or float64; the result has its shape and dtype. An int or bool `x` is a TypeInferenceError.
VJP: `grad_x = multiply(grad, multiply(exp(negative(square(x))), 1.1283791670955126))` (the constant is `2 / sqrt(pi)`).
FLOPs: one per output element.
Dtypes: float32, float64.
)doc"},
  };
  for (const auto& [op, rule, kernel, block, vjp, doc] : unary_ops)
    reg.define(op).set_args({"x"}).set_type_rule(rule).set_doc(doc)
        .set_flops(elementwise_flops).set_kernel(kernel).set_block(block).set_vjp(vjp).set_inplace_ok(true);
  // One conversion per element. The gradient layer gives no gradient when the
  // source or target dtype is not float.
  reg.define(ops::astype).set_args({"x"})
      .add_attr("dtype", AttrKind::kDType)
      .set_type_rule(astype_type).set_flops(elementwise_flops).set_kernel(astype_kernel).set_block(astype_block)
      .set_vjp(astype_vjp)
      .set_doc(R"doc(
Elementwise conversion of `x` to the dtype `dtype` (a dtype name such as `"float32"`, or a NumPy dtype). NumPy: `x.astype(dtype)`. PyTorch: `x.to(dtype)`.
Float to int truncates toward zero, saturates out of range (infinities included) and maps NaN to 0, where NumPy's result is platform-dependent and PyTorch's undefined; any dtype to bool is `!= 0` (NaN is true); int64 to int32 wraps; bool is 0 or 1.

Type: `x` may be any tensor; the result has its shape and the dtype `dtype`.
VJP: `grad_x = astype(grad, dtype=<x's dtype>)` when `x` is float; an int or bool `x` gets no gradient, and a non-float result carries none.
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool, both for `x` and for `dtype`.
)doc");
}

}  // namespace aj
