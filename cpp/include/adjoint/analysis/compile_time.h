// What of a function can be computed at compile time: the weights (params at
// index >= num_input) and every binding whose value uses only weights,
// constants and other compile-time bindings. A binding that uses no var at
// all (zeros((16,), "int32"), a constant) is compile-time but "constant-only";
// the weight-dependent bindings are the compile-time ones that use a weight,
// directly or through earlier bindings: what LiftTransformParams moves out.
// Each is one forward walk over the bindings (DataflowIndex), linear in the
// function's size.
#pragma once

#include <cstdint>
#include <vector>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/function.h"

namespace aj {

// Per binding of the function `index` describes: 1 when its value uses only
// weights, constants and computable bindings.
std::vector<uint8_t> computable_bindings(const DataflowIndex& index);
// Per binding: 1 when it is computable (`computable`, from
// computable_bindings) and depends on at least one weight.
std::vector<uint8_t> weight_dependent_bindings(const DataflowIndex& index, const std::vector<uint8_t>& computable);

// The weights, then the computable binding vars in binding order. Without
// num_input every param is an input, so the list holds the constant-only
// bindings only.
std::vector<Var> computable_at_compile_time(const FunctionNode& fn);

}  // namespace aj
