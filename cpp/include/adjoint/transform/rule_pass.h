// The pass a rule set makes (Python's P.Rewriter): every function rewritten
// by the rules (transform/rewrite.h), then, where a rule fired, cleared of
// the bindings the rewrites left dead. Dead bindings of functions no rule
// changed stay, and a module no rule changes is returned as it is.
#pragma once

#include "adjoint/ir/function.h"
#include "adjoint/pattern/rule.h"
#include "adjoint/transform/rewrite.h"

namespace aj {

// Verifies mod first, at the structure level every pass checks
// (analysis/verifier.h): VerifyError naming `user`, the function and var.
Module apply_rules(const Module& mod, const RuleSet& rules, const RewriteOptions& options = {},
                   const std::string& user = "Rewriter");

}  // namespace aj
