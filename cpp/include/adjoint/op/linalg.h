// Typed readings of the linalg family's calls, for code outside the family
// (passes that rewrite matmuls): the one place that decodes matmul's
// out_dtype attr, and matmul's FLOP rule on types, for passes that weigh
// products they have not built.
#pragma once

#include <optional>

#include "adjoint/ir/expr.h"

namespace aj {

// The dtype a matmul call converts its result to; nullopt for
// out_dtype=None (the result keeps the operands' dtype).
std::optional<DType> matmul_out_dtype(const CallNode& call);

// The FLOPs of a matmul whose left operand has type `lhs` and whose result
// has type `out` (the op's FLOP rule: 2 per multiply-add).
Dim matmul_flops(const TypeNode& lhs, const TypeNode& out);

}  // namespace aj
