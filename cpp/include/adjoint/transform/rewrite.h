// Rewriting calls by rules (pattern/rule.h), binding by binding. Each call
// is tried against the rules of its op, in order; the first whose pattern
// matches and whose replacement gives an expr rewrites it. Patterns see the
// function as it is being rebuilt: earlier bindings as rewritten, and the
// bindings made for the nested calls of replacements.
//
// Algorithm, one round:
//   1. Walk the bindings in order, with uses of vars rewritten away replaced
//      by what now stands for them; keep a binding no rule matches as it is.
//   2. For a call a rule matches, check that the replacement has the call's
//      type (TypeInferenceError naming the binding and both types), then
//      bind the replacement bottom-up: each nested call is itself rewritten
//      to a fixed point first and bound to a new var, the root to the
//      binding's own var (or, when the root is a leaf, uses of the var are
//      replaced by it from here on). An explicit stack holds the nested
//      calls waiting, so replacements may cascade to any depth (a transpose
//      pushed down a chain of matmuls).
//   3. A rule that does not match a var as rewritten may match it as first
//      written (the value the rule rewrote into the one bound): there only
//      a replacement that is a leaf, an existing value, counts. t = T(m)
//      rewritten into a matmul still folds T(t) into m.
//   4. A value a rule rewrote is rewritten once a round: where an equal
//      value comes again (a cascade reaching it from another binding), the
//      leaf it gave stands for it.
//   5. With share_values, a value equal to one already bound is not bound
//      again: the earlier var stands for it (what EliminateCommonSubexpr
//      does, in the same walk).
// Patterns look only at a call and at earlier bindings, which are final
// when they are read, so one round reaches the fixed point, in time linear
// in the bindings and the values rules make. Only a round in which a rule
// read how many users a var has (counts that later rewrites change) is
// followed by another, up to max_rounds. A binding whose rewrites do not
// stop (more than 1024 plus one per binding of the function), or rounds
// that keep changing the function, are a TransformError naming the rules
// still firing. Bindings left unused are not removed: run dead-code
// elimination after.
#pragma once

#include "adjoint/ir/function.h"
#include "adjoint/pattern/rule.h"

namespace aj {

struct RewriteOptions {
  bool share_values = false;  // bind equal values once (step 5)
  int max_rounds = 8;
};

Function rewrite_bindings(const Function& fn, const RuleSet& rules, const RewriteOptions& options = {});
Module rewrite_bindings(const Module& mod, const RuleSet& rules, const RewriteOptions& options = {});

}  // namespace aj
