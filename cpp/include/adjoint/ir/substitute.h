// Rebuilding exprs with vars replaced, and applying a function-level pass to
// every function of a module: the two loops every pass needs.
#pragma once

#include <functional>
#include <unordered_map>

#include "adjoint/ir/function.h"

namespace aj {

using VarMap = std::unordered_map<const VarNode*, Expr>;

// e with every var in `map` replaced by its value; vars not in `map` are kept
// when `keep_unmapped`, else an aj::Error naming the var. Nodes with nothing
// replaced below them are rebuilt only when needed.
Expr substitute(const Expr& e, const VarMap& map, bool keep_unmapped = true);

// A module whose functions are fn_pass(function); the same module when the
// pass returned every function unchanged.
Module map_functions(const Module& mod, const std::function<Function(const Function&)>& fn_pass);

}  // namespace aj
