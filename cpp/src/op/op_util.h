// Helpers shared by the op families' type rules and FLOP counts: NumPy
// broadcasting over (possibly symbolic) shapes, axis normalization, element
// counts.
#pragma once

#include <vector>

#include "adjoint/op/registry.h"

namespace aj {

// Number of elements of a shape (a polynomial when the shape is symbolic).
Dim num_elements(const Shape& shape);

// NumPy broadcasting of two shapes. Fails (naming the op and both shapes) when
// two dims are neither equal nor 1, or cannot be proven equal.
Shape broadcast_shapes(const TypeContext& ctx, const Shape& a, const Shape& b);

// Maps axis in [-ndim, ndim) to [0, ndim); fails naming the op otherwise.
int64_t normalize_axis(const TypeContext& ctx, int64_t axis, int64_t ndim);
// Normalizes a list of axes; fails on duplicates.
std::vector<int64_t> normalize_axes(const TypeContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t ndim);

// Requires args i and j to be tensors of the same dtype.
void require_same_dtype(const TypeContext& ctx, size_t i, size_t j);
void require_float(const TypeContext& ctx, size_t i);

// FLOP count of one op per output element.
Dim elementwise_flops(const CallNode& call);

}  // namespace aj
