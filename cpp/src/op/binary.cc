// Binary elementwise ops with NumPy broadcasting: arithmetic (same dtype in,
// same dtype out) and comparisons (bool out, no gradient); each with its type
// rule and CPU kernel.
//
// Kernel semantics are NumPy's, with these choices where NumPy has none or
// changes the dtype:
//   - ints wrap on overflow; `divide` on ints is floor division
//     (np.floor_divide) with x / 0 = 0 and INT_MIN / -1 = INT_MIN;
//   - `power` on ints is exact by squaring (wrapping); a negative exponent
//     gives 0, except base 1 gives 1 and base -1 gives +-1 by parity;
//   - bool arithmetic is the int arithmetic on 0/1 with the result != 0:
//     add/maximum are or, multiply/minimum/divide are and, subtract is xor,
//     power(a, b) is a or not b;
//   - float maximum/minimum propagate NaN like np.maximum/np.minimum.
#include <cmath>
#include <utility>

#include "adjoint/autodiff/vjp.h"
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
struct Divide {
  template <typename T> T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return a / b;
    else return floor_divide(a, b);
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
struct Less {
  template <typename T> uint8_t operator()(T a, T b) const { return a < b; }
};
struct Greater {
  template <typename T> uint8_t operator()(T a, T b) const { return a > b; }
};

// out = Op(x1, x2) broadcast, in the operands' dtype; bool as int 0/1, != 0.
template <typename Op>
void arithmetic_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t>) {
      binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(),
                          [](T a, T b) { return T(Op{}(int32_t(a), int32_t(b)) != 0); });
    } else {
      binary_map<T, T, T>(ctx.in(0), ctx.in(1), ctx.out(), Op{});
    }
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

// divide: (g / x2, -g * y / x2) with y = x1 / x2
std::vector<Expr> divide_vjp(VJPContext& ctx) {
  Var g_over = ctx.emit(ops::divide, {ctx.grad, ctx.arg(1)});
  return {ctx.collapse_to(g_over, ctx.arg_type(0).shape()),
          ctx.collapse_to(ctx.make(ops::negative, {ctx.make(ops::multiply, {g_over, ctx.result})}), ctx.arg_type(1).shape())};
}

// power: (g * x2 * x1 ** (x2 - 1), g * y * log(x1)) with y = x1 ** x2
std::vector<Expr> power_vjp(VJPContext& ctx) {
  DType t = ctx.arg_type(0).dtype();
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
    Kernel kernel;
    VJPRule vjp;
  };
  const Arithmetic arithmetic[] = {
      {ops::add, arithmetic_kernel<Add>, add_vjp},
      {ops::subtract, arithmetic_kernel<Subtract>, subtract_vjp},
      {ops::multiply, arithmetic_kernel<Multiply>, multiply_vjp},
      {ops::divide, arithmetic_kernel<Divide>, divide_vjp},
      {ops::power, arithmetic_kernel<Power>, power_vjp},
      {ops::maximum, arithmetic_kernel<Maximum>, select_vjp(ops::less)},
      {ops::minimum, arithmetic_kernel<Minimum>, select_vjp(ops::greater)},
  };
  for (const auto& [op, kernel, vjp] : arithmetic)
    reg.define(op).set_args({"x1", "x2"}).set_type_rule(arithmetic_type)
        .set_flops(elementwise_flops).set_kernel(kernel).set_vjp(vjp).set_inplace_ok(true);
  const std::pair<OpHandle, Kernel> comparisons[] = {
      {ops::equal, comparison_kernel<Equal>}, {ops::less, comparison_kernel<Less>},
      {ops::greater, comparison_kernel<Greater>},
  };
  for (const auto& [op, kernel] : comparisons)
    reg.define(op).set_args({"x1", "x2"}).set_type_rule(comparison_type)
        .set_flops(elementwise_flops).set_differentiable(false).set_kernel(kernel);
}

}  // namespace aj
