// The Gradient pass (DESIGN.md §6): reverse-mode differentiation of one
// function of a module into `<name>_adjoint`.
//   1. Start the new function with the function's own params and forward
//      bindings (shared, not copied: IR nodes are immutable).
//   2. Seed the target (the returned value, or field target_index of a
//      returned tuple; a float scalar) with an adjoint of one.
//   3. Walk the forward bindings backward; for each call whose result has an
//      adjoint, run its op's VJP rule and add the argument adjoints into the
//      adjoints of the argument vars (a var used k times sums k terms);
//      tuples and tuple items route adjoints field by field.
//   4. Return (original result, (adjoint of each required var, ...)), zeros
//      for a required var the target does not depend on.
// The original function is left unchanged. Symbolic dims stay symbolic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

struct GradientOptions {
  std::string func_name = "main";
  std::optional<std::vector<std::string>> require_grads;  // nullopt: all float params
  int target_index = 0;
  bool simplify = true;  // simplify the adjoint and remove its dead bindings
};

// Returns the module with `<func_name>_adjoint` added. Throws TransformError
// naming the function, var or op; also when `<func_name>_adjoint` exists.
Module gradient(const Module& mod, const GradientOptions& options);

}  // namespace aj
