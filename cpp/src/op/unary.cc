// Unary elementwise ops: float math (float32/float64 in, same dtype out),
// sign and magnitude ops that also take ints, and astype (any dtype to any);
// each with its type rule and CPU kernel.
//
// Kernel semantics are NumPy's (PyTorch's for the activations), with:
//   - ints wrap: negative/abs of INT_MIN is INT_MIN, square wraps;
//   - sigmoid = 1 / (1 + exp(-x)), computed from exp(-|x|) so that it neither
//     overflows nor loses the small tail for large |x|;
//   - gelu is the exact form 0.5 * x * (1 + erf(x / sqrt(2))), computed as
//     0.5 * x * erfc(-x / sqrt(2)) to keep its precision for negative x;
//   - gelu and silu give 0 at -inf (their limit, where x * 0 would be NaN);
//   - relu keeps NaN (as np.maximum(x, 0)); rsqrt = 1 / sqrt(x);
//   - astype as NumPy's (see convert_value): float to int truncates toward
//     zero, saturates out of range, NaN gives 0; to bool is != 0.
#include <cmath>

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

template <typename T>
T sigmoid(T x) {
  T e = std::exp(-std::abs(x));
  T r = T(1) / (T(1) + e);
  return x >= T(0) ? r : e * r;
}

// The ops, each a functor on its element types.
struct Negative { template <typename T> T operator()(T x) const { return wrap_neg(x); } };
struct Exp { template <typename T> T operator()(T x) const { return std::exp(x); } };
struct Log { template <typename T> T operator()(T x) const { return std::log(x); } };
struct Sqrt { template <typename T> T operator()(T x) const { return std::sqrt(x); } };
struct Rsqrt { template <typename T> T operator()(T x) const { return T(1) / std::sqrt(x); } };
struct Sin { template <typename T> T operator()(T x) const { return std::sin(x); } };
struct Cos { template <typename T> T operator()(T x) const { return std::cos(x); } };
struct Tanh { template <typename T> T operator()(T x) const { return std::tanh(x); } };
struct Sigmoid { template <typename T> T operator()(T x) const { return sigmoid(x); } };
struct Relu { template <typename T> T operator()(T x) const { return x < T(0) ? T(0) : x; } };
struct Square { template <typename T> T operator()(T x) const { return wrap_mul(x, x); } };

struct Abs {
  template <typename T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x);  // abs(-0.0) = 0.0
    else return x < T(0) ? wrap_neg(x) : x;
  }
};
struct Gelu {
  template <typename T> T operator()(T x) const {
    T p = T(0.5) * std::erfc(-x * T(kSqrtHalf));  // Phi(x)
    return p == T(0) ? T(0) : x * p;
  }
};
struct Silu {
  template <typename T> T operator()(T x) const {
    T s = sigmoid(x);
    return s == T(0) ? T(0) : x * s;
  }
};

template <typename Op>
void float_kernel(KernelContext& ctx) {
  dispatch_float(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary_map<T, T>(ctx.in(0), ctx.out(), Op{});
  });
}

template <typename Op>
void numeric_kernel(KernelContext& ctx) {
  dispatch_numeric(ctx.out().dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary_map<T, T>(ctx.in(0), ctx.out(), Op{});
  });
}

void astype_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.in(0).dtype(), [&](auto in_tag) {
    using I = typename decltype(in_tag)::type;
    dispatch_dtype(ctx.out().dtype(), [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      unary_map<O, I>(ctx.in(0), ctx.out(), convert_value<O, I>);
    });
  });
}

struct UnaryOp {
  const char* name;
  TypeRule rule;
  Kernel kernel;
};

}  // namespace

void register_unary_ops(OpRegistry& reg) {
  const UnaryOp ops[] = {
      {"negative", numeric_unary_type, numeric_kernel<Negative>},
      {"exp", float_unary_type, float_kernel<Exp>},
      {"log", float_unary_type, float_kernel<Log>},
      {"sqrt", float_unary_type, float_kernel<Sqrt>},
      {"rsqrt", float_unary_type, float_kernel<Rsqrt>},
      {"sin", float_unary_type, float_kernel<Sin>},
      {"cos", float_unary_type, float_kernel<Cos>},
      {"tanh", float_unary_type, float_kernel<Tanh>},
      {"sigmoid", float_unary_type, float_kernel<Sigmoid>},
      {"relu", numeric_unary_type, numeric_kernel<Relu>},
      {"gelu", float_unary_type, float_kernel<Gelu>},
      {"silu", float_unary_type, float_kernel<Silu>},
      {"abs", numeric_unary_type, numeric_kernel<Abs>},
      {"square", numeric_unary_type, numeric_kernel<Square>},
  };
  for (const auto& op : ops)
    reg.define(op.name).set_family("unary").set_args({"x"}).set_type_rule(op.rule)
        .set_flops(elementwise_flops).set_kernel(op.kernel);
  // One conversion per element. The gradient layer gives no gradient when the
  // source or target dtype is not float.
  reg.define("astype").set_family("unary").set_args({"x"})
      .add_attr("dtype", AttrKind::kDType)
      .set_type_rule(astype_type).set_flops(elementwise_flops).set_kernel(astype_kernel);
}

}  // namespace aj
