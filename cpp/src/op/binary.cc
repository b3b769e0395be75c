// Binary elementwise ops with NumPy broadcasting: arithmetic (same dtype in,
// same dtype out, except `divide`), comparisons (bool out, no gradient); each
// with its type rule and CPU kernel.
//
// Kernel semantics are NumPy's, with these choices where NumPy has none or
// changes the dtype:
//   - `divide` is true division (np.divide): on ints and bools the result is
//     float64 (x / 0 is inf, -inf or nan, as NumPy gives);
//   - `floor_divide` and `floor_mod` are np.floor_divide and np.remainder (the
//     result of `floor_mod` has the divisor's sign); on ints x // 0 = 0,
//     x % 0 = 0 and INT_MIN // -1 = INT_MIN (NumPy's results); on floats
//     x % 0 is nan; both take numeric dtypes only (NumPy makes bools int8);
//   - ints wrap on overflow;
//   - `power` on ints is exact by squaring (wrapping); a negative exponent
//     gives 0, except base 1 gives 1 and base -1 gives +-1 by parity;
//   - bool arithmetic is the int arithmetic on 0/1 with the result != 0:
//     add/maximum are or, multiply/minimum are and, subtract is xor,
//     power(a, b) is a or not b;
//   - float maximum/minimum propagate NaN like np.maximum/np.minimum.
#include <cmath>
#include <optional>
#include <utility>

#include "adjoint/autodiff/vjp.h"
#include "adjoint/runtime/block_kernel.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
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

// x1, x2 of one dtype -> broadcast shape; float dtypes keep theirs, ints and
// bool divide to float64 (np.divide).
Type divide_type(const TypeContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  const TypeNode& a = ctx.tensor(0);
  DType out = is_float(a.dtype()) ? a.dtype() : DType::kFloat64;
  return TypeNode::tensor(broadcast_shapes(ctx, a.shape(), ctx.tensor(1).shape()), out);
}

// arithmetic_type on numeric dtypes only (floor_divide, floor_mod).
Type numeric_arithmetic_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  return arithmetic_type(ctx);
}

Type comparison_type(const TypeContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  return TypeNode::tensor(broadcast_shapes(ctx, ctx.tensor(0).shape(), ctx.tensor(1).shape()),
                          DType::kBool);
}

// Floor division; x / 0 = 0 and INT_MIN / -1 wraps (both undefined in C++).
template <typename T>
T floor_divide(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  T q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? T(q - 1) : q;
}

// Python's floor division and remainder of floats, as NumPy's npy_divmod:
// fmod, corrected to the divisor's sign, the quotient snapped to an integer.
// b == 0 gives a / b and fmod(a, 0) (nan), as np.floor_divide/np.remainder.
template <typename T>
std::pair<T, T> float_divmod(T a, T b) {
  T mod = std::fmod(a, b);
  if (b == 0) return {a / b, mod};
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= T(1);
    }
  } else {
    mod = std::copysign(T(0), b);
  }
  T floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
  } else {
    floordiv = std::copysign(T(0), a / b);
  }
  return {floordiv, mod};
}

// Remainder with the divisor's sign; x % 0 = 0 (NumPy's), x % -1 = 0.
template <typename T>
T floor_mod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? T(r + b) : r;
}

// Exact integer power by squaring, wrapping on overflow.
template <typename T>
T int_power(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : base == -1 ? T(exp % 2 == 0 ? 1 : -1) : T(0);
  T result = 1;
  for (; exp != 0; exp /= 2) {
    if (exp % 2 != 0) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
  }
  return result;
}

// The arithmetic ops, each a functor on float and int element types.
struct Add {
  template <typename T> T operator()(T a, T b) const { return wrap_add(a, b); }
};
struct Subtract {
  template <typename T> T operator()(T a, T b) const { return wrap_sub(a, b); }
};
struct Multiply {
  template <typename T> T operator()(T a, T b) const { return wrap_mul(a, b); }
};
struct FloorDivide {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return float_divmod(a, b).first;
    else return floor_divide(a, b);
  }
};
struct FloorMod {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return float_divmod(a, b).second;
    else return floor_mod(a, b);
  }
};
struct Power {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::pow(a, b);
    else return int_power(a, b);
  }
};
// a >= b || a is NaN: a; else b (NaN when b is NaN), as np.maximum.
struct Maximum {
  template <typename T> T operator()(T a, T b) const { return (a >= b || a != a) ? a : b; }
};
struct Minimum {
  template <typename T> T operator()(T a, T b) const { return (a <= b || a != a) ? a : b; }
};

struct Equal {
  template <typename T> uint8_t operator()(T a, T b) const { return a == b; }
};
struct NotEqual {
  template <typename T> uint8_t operator()(T a, T b) const { return a != b; }
};
struct LessEqual {
  template <typename T> uint8_t operator()(T a, T b) const { return a <= b; }
};
struct GreaterEqual {
  template <typename T> uint8_t operator()(T a, T b) const { return a >= b; }
};
struct Less {
  template <typename T> uint8_t operator()(T a, T b) const { return a < b; }
};
struct Greater {
  template <typename T> uint8_t operator()(T a, T b) const { return a > b; }
};

// Bool arithmetic: Op on the ints 0/1, then != 0.
template <typename Op>
struct OnBool {
  uint8_t operator()(uint8_t a, uint8_t b) const { return uint8_t(Op{}(int32_t(a), int32_t(b)) != 0); }
};
// True division: in the float dtype, or in double for ints and bool.
struct TrueDivide {
  template <typename T> T operator()(T a, T b) const { return a / b; }
};
struct DivideAsDouble {
  template <typename T> double operator()(T a, T b) const { return double(a) / double(b); }
};

// out = Op(x1, x2) broadcast, in the operands' dtype; bool as int 0/1, != 0.
template <typename Op>
void arithmetic_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t>) binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(), OnBool<Op>{});
    else binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(), Op{});
  });
}

// out = x1 / x2 broadcast: in the float dtype, or in double for ints and bool.
void divide_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(), TrueDivide{});
    else binary_map<double, T, T>(ctx.in(0), ctx.in(1), ctx.out(), DivideAsDouble{});
  });
}

// out (bool) = Op(x1, x2) broadcast.
template <typename Op>
void comparison_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_map<uint8_t, T, T>(ctx.in(0), ctx.in(1), ctx.out(), Op{});
  });
}

// The block functions of fusion (runtime/block_kernel.h), by the operands'
// dtype, with the kernels' functors. floor_divide and floor_mod have no bool
// kernel, so no bool block either.
template <typename Op>
BlockFn arithmetic_block(const CallNode& call) {
  return dispatch_dtype(call.type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t>) return binary_block<T, T, T, OnBool<Op>>;
    else return binary_block<T, T, T, Op>;
  });
}

template <typename Op>
BlockFn numeric_block(const CallNode& call) {
  if (call.type()->dtype() == DType::kBool) return nullptr;
  return arithmetic_block<Op>(call);
}

BlockFn divide_block(const CallNode& call) {
  return dispatch_dtype(call.args()[0]->type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) return binary_block<T, T, T, TrueDivide>;
    else return binary_block<double, T, T, DivideAsDouble>;
  });
}

template <typename Op>
BlockFn comparison_block(const CallNode& call) {
  return dispatch_dtype(call.args()[0]->type()->dtype(), [](auto tag) -> BlockFn {
    using T = typename decltype(tag)::type;
    return binary_block<uint8_t, T, T, Op>;
  });
}


// ---- VJPs: each adjoint is summed down to its operand's shape (collapse_to)
// because broadcasting may have made the result larger. ----

// add: (g, g)
std::vector<Expr> add_vjp(VJPContext& ctx) {
  return {ctx.collapse_to(ctx.grad, ctx.arg_type(0).shape()), ctx.collapse_to(ctx.grad, ctx.arg_type(1).shape())};
}

// subtract: (g, -g)
std::vector<Expr> subtract_vjp(VJPContext& ctx) {
  return {ctx.collapse_to(ctx.grad, ctx.arg_type(0).shape()),
          ctx.collapse_to(ctx.make(ops::negative, {ctx.grad}), ctx.arg_type(1).shape())};
}

// multiply: (g * x2, g * x1)
std::vector<Expr> multiply_vjp(VJPContext& ctx) {
  return {ctx.collapse_to(ctx.make(ops::multiply, {ctx.grad, ctx.arg(1)}), ctx.arg_type(0).shape()),
          ctx.collapse_to(ctx.make(ops::multiply, {ctx.grad, ctx.arg(0)}), ctx.arg_type(1).shape())};
}

// divide: (g / x2, -g * y / x2) with y = x1 / x2; int and bool operands
// (whose float64 quotient a float path may reach) take no gradient.
std::vector<Expr> divide_vjp(VJPContext& ctx) {
  if (!is_float(ctx.arg_type(0).dtype())) return {nullptr, nullptr};
  Var g_over = ctx.emit(ops::divide, {ctx.grad, ctx.arg(1)});
  return {ctx.collapse_to(g_over, ctx.arg_type(0).shape()),
          ctx.collapse_to(ctx.make(ops::negative, {ctx.make(ops::multiply, {g_over, ctx.result})}), ctx.arg_type(1).shape())};
}

// floor_divide: piecewise constant, so zero adjoints
std::vector<Expr> floor_divide_vjp(VJPContext& ctx) {
  return {ctx.make(ops::zeros_like, {ctx.arg(0)}), ctx.make(ops::zeros_like, {ctx.arg(1)})};
}

// floor_mod: x1 - x2 * floor_divide(x1, x2), so (g, -g * floor_divide(x1, x2))
std::vector<Expr> floor_mod_vjp(VJPContext& ctx) {
  Expr quotient = ctx.make(ops::floor_divide, {ctx.arg(0), ctx.arg(1)});
  Expr d2 = ctx.make(ops::negative, {ctx.make(ops::multiply, {ctx.grad, quotient})});
  return {ctx.collapse_to(ctx.grad, ctx.arg_type(0).shape()), ctx.collapse_to(d2, ctx.arg_type(1).shape())};
}

// The value of a one-element float constant, the exponent of `x ** 2`.
std::optional<double> float_scalar_constant(const Expr& e) {
  auto* c = as<ConstantNode>(e);
  if (!c || c->data().numel() != 1 || !is_float(c->data().dtype())) return std::nullopt;
  return c->data().get_as_double(0);
}

// power by a constant c: (g * (x1 ** (c - 1) * c), none), with c - 1 folded:
// x ** 2 differentiates as square does, x ** 1 passes g on, and x ** 0
// gives zeros (not g * 0 * x ** -1, which is NaN at 0), as in PyTorch.
Expr power_by_constant_vjp(VJPContext& ctx, double c) {
  DType t = ctx.arg_type(0).dtype();
  if (c == 0) return ctx.make(ops::zeros_like, {ctx.arg(0)});
  if (c == 1) return ctx.collapse_to(ctx.grad, ctx.arg_type(0).shape());
  Expr base = c == 2 ? ctx.arg(0) : ctx.make(ops::power, {ctx.arg(0), ctx.scalar(c - 1, t)});
  Expr d1 = ctx.make(ops::multiply, {ctx.grad, ctx.make(ops::multiply, {base, ctx.scalar(c, t)})});
  return ctx.collapse_to(d1, ctx.arg_type(0).shape());
}

// power: (g * x2 * x1 ** (x2 - 1), g * y * log(x1)) with y = x1 ** x2
std::vector<Expr> power_vjp(VJPContext& ctx) {
  DType t = ctx.arg_type(0).dtype();
  if (auto c = float_scalar_constant(ctx.arg(1)); c && is_float(t)) return {power_by_constant_vjp(ctx, *c), nullptr};
  Expr x2_minus_1 = ctx.make(ops::subtract, {ctx.arg(1), ctx.scalar(1.0, t)});
  Expr d1 = ctx.make(ops::multiply, {ctx.make(ops::multiply, {ctx.grad, ctx.arg(1)}), ctx.make(ops::power, {ctx.arg(0), x2_minus_1})});
  Expr d2 = ctx.make(ops::multiply, {ctx.make(ops::multiply, {ctx.grad, ctx.result}), ctx.make(ops::log, {ctx.arg(0)})});
  return {ctx.collapse_to(d1, ctx.arg_type(0).shape()), ctx.collapse_to(d2, ctx.arg_type(1).shape())};
}

// maximum / minimum: g goes to the operand that was chosen (x1 on ties).
// `x1_lost` is the comparison true where x2 was chosen.
VJPRule select_vjp(OpHandle x1_lost) {
  return [x1_lost](VJPContext& ctx) -> std::vector<Expr> {
    Var x2_won = ctx.emit(x1_lost, {ctx.arg(0), ctx.arg(1)});
    Var zero = ctx.emit(ops::zeros_like, {ctx.grad});
    return {ctx.collapse_to(ctx.make(ops::where, {x2_won, zero, ctx.grad}), ctx.arg_type(0).shape()),
            ctx.collapse_to(ctx.make(ops::where, {x2_won, ctx.grad, zero}), ctx.arg_type(1).shape())};
  };
}

}  // namespace

void register_binary_ops(OpRegistry& reg) {
  struct Arithmetic {
    OpHandle op;
    TypeRule type;
    Kernel kernel;
    BlockRule block;  // the kernel's work on one block, for fusion
    VJPRule vjp;
    const char* doc;  // the op's reference text (OpDef::doc)
  };
  const Arithmetic arithmetic[] = {
      {ops::add, arithmetic_type, arithmetic_kernel<Add>, arithmetic_block<Add>, add_vjp, R"doc(
Elementwise sum, `x1 + x2`, with broadcasting. NumPy: `np.add(x1, x2)`. PyTorch: `torch.add(x1, x2)`.
Integers wrap on overflow; on bool it is a logical or (as NumPy's).

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: `grad_x1 = collapse_sum_to(grad, shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(grad, shape=<x2's shape>)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::subtract, arithmetic_type, arithmetic_kernel<Subtract>, arithmetic_block<Subtract>, subtract_vjp, R"doc(
Elementwise difference, `x1 - x2`, with broadcasting. NumPy: `np.subtract(x1, x2)`. PyTorch: `torch.sub(x1, x2)`.
Integers wrap on overflow; on bool it is a logical xor (NumPy and PyTorch refuse bool).

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: `grad_x1 = collapse_sum_to(grad, shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(negative(grad), shape=<x2's shape>)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::multiply, arithmetic_type, arithmetic_kernel<Multiply>, arithmetic_block<Multiply>, multiply_vjp, R"doc(
Elementwise product, `x1 * x2`, with broadcasting. NumPy: `np.multiply(x1, x2)`. PyTorch: `torch.mul(x1, x2)`.
Integers wrap on overflow; on bool it is a logical and (as NumPy's).

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: `grad_x1 = collapse_sum_to(multiply(grad, x2), shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(multiply(grad, x1), shape=<x2's shape>)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::divide, divide_type, divide_kernel, divide_block, divide_vjp, R"doc(
Elementwise true division, `x1 / x2`, with broadcasting. NumPy: `np.divide(x1, x2)`. PyTorch: `torch.div(x1, x2)` (which divides ints to the default float dtype, float32, where this gives float64).
Ints and bools are divided in float64, as NumPy does; division by zero gives inf, -inf or NaN.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape; a float dtype is kept, int32, int64 and bool give float64. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: with `q = divide(grad, x2)`: `grad_x1 = collapse_sum_to(q, shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(negative(multiply(q, y)), shape=<x2's shape>)`, where `y = divide(x1, x2)` is the op's result (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`). Int and bool operands get no gradient.
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is float32 or float64).
)doc"},
      {ops::floor_divide, numeric_arithmetic_type, arithmetic_kernel<FloorDivide>, numeric_block<FloorDivide>, floor_divide_vjp, R"doc(
Elementwise floor division, `x1 // x2` rounded toward negative infinity, with broadcasting. NumPy: `np.floor_divide(x1, x2)`. PyTorch: `torch.floor_divide(x1, x2)`.
On ints, `x // 0 = 0` and the smallest int divided by -1 wraps to itself (NumPy's results); on floats it is Python's floor division (as NumPy's), and `x // 0` is `x / 0` (inf, -inf or NaN).

Type: as `add`, and the operands must be numeric: a bool `x1` is a TypeInferenceError (NumPy would compute in int8). The result has the broadcast shape and the operands' dtype.
VJP: `grad_x1 = zeros_like(x1)`, `grad_x2 = zeros_like(x2)`: the op is piecewise constant.
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::floor_mod, numeric_arithmetic_type, arithmetic_kernel<FloorMod>, numeric_block<FloorMod>, floor_mod_vjp, R"doc(
Elementwise remainder of floor division, with the sign of the divisor `x2`, with broadcasting. NumPy: `np.remainder(x1, x2)`. PyTorch: `torch.remainder(x1, x2)`.
On ints `x % 0 = 0` (NumPy's result); on floats `x % 0` is NaN.

Type: as `add`, and the operands must be numeric: a bool `x1` is a TypeInferenceError. The result has the broadcast shape and the operands' dtype.
VJP: `grad_x1 = collapse_sum_to(grad, shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(negative(multiply(grad, floor_divide(x1, x2))), shape=<x2's shape>)`, from `x1 % x2 = x1 - x2 * (x1 // x2)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`).
FLOPs: one per output element.
Dtypes: float32, float64, int32, int64.
)doc"},
      {ops::power, arithmetic_type, arithmetic_kernel<Power>, arithmetic_block<Power>, power_vjp, R"doc(
Elementwise power, `x1 ** x2`, with broadcasting. NumPy: `np.power(x1, x2)`. PyTorch: `torch.pow(x1, x2)`.
Floats use the C library's `pow`. Ints are exact by repeated squaring and wrap on overflow; a negative exponent gives 0, except that base 1 gives 1 and base -1 gives 1 or -1 by the exponent's parity (NumPy raises an error instead). On bool, `power(a, b)` is `a or not b`.

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: `grad_x1 = collapse_sum_to(multiply(multiply(grad, x2), power(x1, subtract(x2, 1))), shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(multiply(multiply(grad, y), log(x1)), shape=<x2's shape>)`, where `y = power(x1, x2)` is the op's result (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`). `grad_x2` is NaN where `x1 <= 0` (PyTorch gives 0 where `x1 = 0`).
When `x2` is a one-element float constant `c` (`x ** 2` from Python), `grad_x1 = collapse_sum_to(multiply(grad, multiply(power(x1, c - 1), c)), shape=<x1's shape>)` with `c - 1` computed, `multiply(grad, multiply(x1, 2))` for `c = 2` (as `square`), `grad` for `c = 1` and `zeros_like(x1)` for `c = 0` (PyTorch's zeros, where the general rule gives NaN at `x1 = 0`), and the constant gets none.
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::maximum, arithmetic_type, arithmetic_kernel<Maximum>, arithmetic_block<Maximum>, select_vjp(ops::less), R"doc(
Elementwise maximum of `x1` and `x2`, with broadcasting. NumPy: `np.maximum(x1, x2)`. PyTorch: `torch.maximum(x1, x2)`.
A NaN in either operand gives NaN (as both of those). On bool it is a logical or.

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: with `lost = less(x1, x2)` (where `x2` was chosen): `grad_x1 = collapse_sum_to(where(lost, zeros_like(grad), grad), shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(where(lost, grad, zeros_like(grad)), shape=<x2's shape>)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`). A tie sends the whole gradient to `x1` (PyTorch splits it in halves).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
      {ops::minimum, arithmetic_type, arithmetic_kernel<Minimum>, arithmetic_block<Minimum>, select_vjp(ops::greater), R"doc(
Elementwise minimum of `x1` and `x2`, with broadcasting. NumPy: `np.minimum(x1, x2)`. PyTorch: `torch.minimum(x1, x2)`.
A NaN in either operand gives NaN (as both of those). On bool it is a logical and.

Type: `x1` and `x2` must have the same dtype (there is no type promotion: a Python number given to `aj.op` takes the other operand's dtype); their shapes broadcast as NumPy's, right-aligned, each pair of dims equal or one of them 1, where symbolic dims must be equal as polynomials. The result has the broadcast shape and the operands' dtype. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: with `lost = greater(x1, x2)` (where `x2` was chosen): `grad_x1 = collapse_sum_to(where(lost, zeros_like(grad), grad), shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(where(lost, grad, zeros_like(grad)), shape=<x2's shape>)` (`collapse_sum_to(e, shape=s)` sums `e` over the dims broadcasting added; it is left out where `e` already has shape `s`). A tie sends the whole gradient to `x1` (PyTorch splits it in halves).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool.
)doc"},
  };
  for (const auto& [op, type, kernel, block, vjp, doc] : arithmetic)
    reg.define(op).set_args({"x1", "x2"}).set_type_rule(type).set_doc(doc)
        .set_flops(elementwise_flops).set_kernel(kernel).set_block(block).set_vjp(vjp).set_inplace_ok(true);
  struct Comparison {
    OpHandle op;
    Kernel kernel;
    BlockRule block;
    const char* doc;
  };
  const Comparison comparisons[] = {
      {ops::equal, comparison_kernel<Equal>, comparison_block<Equal>, R"doc(
Elementwise comparison `x1 == x2`, with broadcasting. NumPy: `np.equal(x1, x2)`. PyTorch: `torch.eq(x1, x2)`.
A comparison with NaN is false.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
      {ops::not_equal, comparison_kernel<NotEqual>, comparison_block<NotEqual>, R"doc(
Elementwise comparison `x1 != x2`, with broadcasting. NumPy: `np.not_equal(x1, x2)`. PyTorch: `torch.ne(x1, x2)`.
A comparison with NaN is true.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
      {ops::less, comparison_kernel<Less>, comparison_block<Less>, R"doc(
Elementwise comparison `x1 < x2`, with broadcasting. NumPy: `np.less(x1, x2)`. PyTorch: `torch.lt(x1, x2)`.
A comparison with NaN is false.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
      {ops::less_equal, comparison_kernel<LessEqual>, comparison_block<LessEqual>, R"doc(
Elementwise comparison `x1 <= x2`, with broadcasting. NumPy: `np.less_equal(x1, x2)`. PyTorch: `torch.le(x1, x2)`.
A comparison with NaN is false.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
      {ops::greater, comparison_kernel<Greater>, comparison_block<Greater>, R"doc(
Elementwise comparison `x1 > x2`, with broadcasting. NumPy: `np.greater(x1, x2)`. PyTorch: `torch.gt(x1, x2)`.
A comparison with NaN is false.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
      {ops::greater_equal, comparison_kernel<GreaterEqual>, comparison_block<GreaterEqual>, R"doc(
Elementwise comparison `x1 >= x2`, with broadcasting. NumPy: `np.greater_equal(x1, x2)`. PyTorch: `torch.ge(x1, x2)`.
A comparison with NaN is false.

Type: `x1` and `x2` must have the same dtype (no type promotion); their shapes broadcast as NumPy's, where symbolic dims must be equal as polynomials. The result has the broadcast shape and dtype bool. Differing dtypes and dims that are neither equal nor 1 (or not provably equal) are TypeInferenceErrors.
VJP: none (not differentiable: the result is bool, and no gradient reaches `x1` or `x2` through it).
FLOPs: one per output element.
Dtypes: all: float32, float64, int32, int64, bool (the result is bool).
)doc"},
  };
  for (const auto& [op, kernel, block, doc] : comparisons)
    reg.define(op).set_args({"x1", "x2"}).set_type_rule(comparison_type).set_doc(doc)
        .set_flops(elementwise_flops).set_differentiable(false).set_kernel(kernel).set_block(block);
}

}  // namespace aj
