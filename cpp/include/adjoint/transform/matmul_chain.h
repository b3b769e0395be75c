// Matrix-chain ordering for ReassociateMatmul: the bracketings of a product
// leaves[0] @ leaves[1] @ ... @ leaves[k-1] worth weighing against the
// chain's own. The classic interval DP (cost of an interval = cheapest
// split: left part + right part + the matmul joining them, free when every
// leaf of the interval is computable at compile time), run once per sample
// point of the dims: the bounds' lows, their highs (a low times 1024 when
// unbounded) and a point between. With static shapes there is one point and
// the result is the exact optimum. The caller keeps a bracketing only when
// FormCost::choose proves it cheaper for every dim value in the bounds.
// Work: O(k^2) matmul type inferences (one per interval), O(k^3) FLOP
// counts on types and O(k^3) per point; chains are cut
// at kMaxChainLeaves leaves.
#pragma once

#include <cstddef>
#include <vector>

#include "adjoint/ir/attrs.h"
#include "adjoint/transform/form_cost.h"

namespace aj {

constexpr size_t kMaxChainLeaves = 16;

// Distinct bracketings (forms: trees of matmul calls with `attrs`), the
// cheapest per sample point; empty when some part of the chain does not
// type as a matmul.
std::vector<Expr> cheapest_bracketings(const std::vector<Expr>& leaves, const Attrs& attrs, const FormCost& cost);

}  // namespace aj
