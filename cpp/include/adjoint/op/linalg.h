// Typed readings of the linalg family's calls, for code outside the family
// (passes that rewrite matmuls): the one place that decodes matmul's
// out_dtype attr.
#pragma once

#include <optional>

#include "adjoint/ir/expr.h"

namespace aj {

// The dtype a matmul call converts its result to; nullopt for
// out_dtype=None (the result keeps the operands' dtype).
std::optional<DType> matmul_out_dtype(const CallNode& call);

}  // namespace aj
