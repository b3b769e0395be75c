// Typed readings and builders of the manipulate family's calls, for code
// outside the family (passes, other families' VJP rules, the executor): the
// one place that decodes permute_dims's axes attr, and the one way to build
// a permute_dims or a transpose.
#pragma once

#include <cstdint>
#include <vector>

#include "adjoint/ir/expr.h"

namespace aj {

// The full permutation of a permute_dims call, every axis non-negative
// (axes=None reverses all axes).
std::vector<int64_t> permute_dims_permutation(const CallNode& call);
bool is_identity_permutation(const std::vector<int64_t>& p);
// Whether p is the identity but for its last two axes, swapped (rank >= 2).
bool swaps_last_two(const std::vector<int64_t>& p);
// Whether c is a permute_dims call that swaps its last two axes: "T".
bool is_transpose(const CallNode* c);
// The identity permutation of rank n with its last two axes swapped (n >= 2).
std::vector<int64_t> transpose_permutation(size_t n);
// The permutation q with q[p[i]] = i: permuting by p, then by q, is the identity.
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& p);

// permute_dims(x, axes=p) as an unbound call, in canonical form: without
// axes when p reverses a rank-2 x.
Call make_permute_dims(const Expr& x, const std::vector<int64_t>& p);
// T(x): x (rank >= 2) with its last two axes swapped.
Call make_transpose(const Expr& x);

}  // namespace aj
