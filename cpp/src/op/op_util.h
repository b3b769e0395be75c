// Helpers shared by the op families' type rules and FLOP counts: NumPy
// broadcasting over (possibly symbolic) shapes, axis normalization, dtype
// checks, exact division of dims, element counts; and, at the end, helpers
// for VJP rules.
#pragma once

#include <optional>
#include <vector>

#include "adjoint/op/registry.h"

namespace aj {

// Number of elements of a shape (a polynomial when the shape is symbolic).
Dim num_elements(const Shape& shape);

inline bool is_const_one(const Dim& d) { return d.is_const() && d.value() == 1; }

// a / b when it is exact for every value of the symbols: b a nonzero constant
// dividing every coefficient of a, or a single term dividing every term of a
// (8*n*m / 4*n = 2*m), or b == a. nullopt otherwise.
std::optional<Dim> exact_divide(const Dim& a, const Dim& b);

// NumPy broadcasting of two shapes. Fails (naming the op and both shapes) when
// two dims are neither equal nor 1, or cannot be proven equal.
Shape broadcast_shapes(const TypeContext& ctx, const Shape& a, const Shape& b);
// Requires `from` to broadcast to `to` (right-aligned, each dim equal or 1);
// fails naming both (from_name, to_name: "x", "shape"), their shapes and the
// first offending dim.
void require_broadcastable(const TypeContext& ctx, const Shape& from, const char* from_name,
                           const Shape& to, const char* to_name);

// Maps axis in [-ndim, ndim) to [0, ndim); fails naming the op otherwise.
int64_t normalize_axis(const TypeContext& ctx, int64_t axis, int64_t ndim);
// Normalizes a list of axes; fails on duplicates.
std::vector<int64_t> normalize_axes(const TypeContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t ndim);

// Requires args i and j to be tensors of the same dtype.
void require_same_dtype(const TypeContext& ctx, size_t i, size_t j);
// Require arg i to be a tensor of: float32/float64; any dtype but bool;
// int32/int64; bool.
void require_float(const TypeContext& ctx, size_t i);
void require_numeric(const TypeContext& ctx, size_t i);
void require_int(const TypeContext& ctx, size_t i);
void require_bool(const TypeContext& ctx, size_t i);
// Requires arg i to be a tensor of the given rank.
void require_rank(const TypeContext& ctx, size_t i, size_t ndim);

// FLOP count of one op per output element.
Dim elementwise_flops(const CallNode& call);
// K FLOPs per element of the first argument.
template <int64_t K>
Dim per_input_element_flops(const CallNode& call) {
  return Dim(K) * num_elements(call.args()[0]->type()->shape());
}
// No arithmetic: data movement and creation.
Dim zero_flops(const CallNode& call);

}  // namespace aj

// ---- Helpers for VJP rules ----
#include <initializer_list>

#include "adjoint/autodiff/vjp.h"

namespace aj {

// Axes in [-ndim, ndim) (already checked by the type rule) mapped to [0, ndim).
std::vector<int64_t> wrap_axes(const std::vector<int64_t>& axes, int64_t ndim);
// The axes of a rank-ndim tensor not in `axes`, ascending.
std::vector<int64_t> other_axes(const std::vector<int64_t>& axes, int64_t ndim);
// numerator / (the number of elements of `dims`) as a scalar of `dtype`: a
// constant when the dims are constant, else numerator / sum(ones(dims)) at
// run time.
Expr count_fraction(VJPContext& ctx, double numerator, const Shape& dims, DType dtype);
// The named attrs of the forward call, to pass on to the ops of its adjoint.
KwAttrs forward_attrs(const VJPContext& ctx, std::initializer_list<const char*> names);

}  // namespace aj
