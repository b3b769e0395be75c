// A coverage-guided (libFuzzer) target for rules written as IR (Python's
// P.Rewriter.from_text, pattern/template_rule.h) and the rewriter that
// applies them. Each input is a text; a module that parses and verifies, and
// holds functions `pattern` and `replacement`, gives a rule (or an aj::Error
// saying why it is none). The rule then rewrites the module's other
// functions, alone and with SimplifyGradient's rules after it. Template rules
// never make a module ill-typed, so the result must verify fully; a rewrite
// that does not stop may be refused with an aj::Error. Another exception or
// a sanitizer report is a finding.
// Built by CMake with -DADJOINT_LIBFUZZER=ON and clang (README, "Fuzzing").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/pattern/template_rule.h"
#include "adjoint/support/error.h"
#include "fuzz_run.h"
#include "adjoint/transform/passes.h"
#include "adjoint/transform/rewrite.h"

namespace {

using aj::fuzz::finding;
using aj::fuzz::program;

void rewrite_checked(const aj::Module& targets, const aj::RuleSet& rules, const char* which, const std::string& text) {
  aj::Module out;
  try {
    out = aj::rewrite_bindings(targets, rules);
  } catch (const aj::Error&) {
    return;
  } catch (const std::bad_alloc&) {
    return;
  }
  auto problems = aj::verify_problems(out);
  if (!problems.empty())
    finding(std::string("rewriting by ") + which + " made a module that does not verify: " + problems.front(),
            program(text) + "\n--- output:\n" + aj::print_module(out));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = aj::fuzz::parse_or_none(text);
  if (!parsed) return 0;
  const aj::Module& mod = *parsed;
  if (!mod->contains("pattern") || !mod->contains("replacement") || !aj::well_formed(mod)) return 0;
  std::vector<std::pair<std::string, aj::Function>> rule_functions, targets;
  for (const auto& [name, fn] : mod->functions())
    (name == "pattern" || name == "replacement" ? rule_functions : targets).emplace_back(name, fn);
  aj::RuleSet rule;
  try {
    rule = aj::RuleSet({aj::template_rule("fuzzed", std::make_shared<const aj::ModuleNode>(rule_functions))});
  } catch (const aj::Error&) {
    return 0;  // no rule: a param unused, a pattern returning no call, ... (template_rule.h)
  } catch (const std::bad_alloc&) {
    return 0;
  }
  try {
    auto target_module = std::make_shared<const aj::ModuleNode>(targets);
    rewrite_checked(target_module, rule, "the rule", text);
    rewrite_checked(target_module, rule + aj::simplify_gradient_rules(), "the rule and SimplifyGradient's", text);
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {  // a rewrite refusing a module is caught in rewrite_checked
    finding(std::string("an exception outside a rewrite: ") + e.what(), program(text));
  }
  return 0;
}
