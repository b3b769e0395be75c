// The module-to-module passes of cpp/src/transform/, each a pure function
// over immutable IR.
#pragma once

#include "adjoint/ir/function.h"

namespace aj {

// Removes bindings whose values nothing returns or uses (all ops are pure),
// in every function.
Module dead_code_elimination(const Module& mod);
Function dead_code_elimination(const Function& fn);

}  // namespace aj
