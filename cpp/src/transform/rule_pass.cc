// The rule-set pass (transform/rule_pass.h).
#include "adjoint/transform/rule_pass.h"

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/transform/passes.h"

namespace aj {

Module apply_rules(const Module& mod, const RuleSet& rules, const RewriteOptions& options, const std::string& user) {
  verify_input(mod, user);  // a malformed module is a VerifyError, not a failure inside a rule
  return map_functions(mod, [&](const Function& fn) {
    Function out = rewrite_bindings(fn, rules, options);
    return out == fn ? fn : dead_code_elimination(std::move(out));
  });
}

}  // namespace aj
