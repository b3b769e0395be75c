// The module-to-module passes of cpp/src/transform/, each a pure function
// over immutable IR.
#pragma once

#include "adjoint/ir/function.h"

namespace aj {

class RuleSet;  // pattern/rule.h

// Removes bindings whose values nothing returns or uses (all ops are pure),
// in every function.
Module dead_code_elimination(const Module& mod);
Function dead_code_elimination(const Function& fn);

// Binds identical pure values (same op, attrs and arguments) once.
Module eliminate_common_subexpr(const Module& mod);
Function eliminate_common_subexpr(const Function& fn);

// SimplifyGradient: the rule table of simplify_gradient.cc applied to a
// fixed point (transform/rewrite.h), then dead-code elimination.
Module simplify_gradient(const Module& mod);
Function simplify_gradient(const Function& fn);
// The rewrites alone, leaving dead bindings (for pipelines that remove them
// once, at the end); with share_values, common subexpressions are
// eliminated in the same pass.
Function rewrite_simplify_gradient(const Function& fn, bool share_values = false);
// The rule table itself: names and descriptions for SimplifyGradient.rules.
const RuleSet& simplify_gradient_rules();

// ReorderPermuteDimsAfterConcat: concat((permute_dims(x, p), ...), axis)
// with one p for every field becomes permute_dims(concat((x, ...),
// axis=p[axis]), p), in every function, then dead-code elimination.
Module reorder_permute_dims_after_concat(const Module& mod);
// Its rule table (one rule).
const RuleSet& reorder_permute_dims_after_concat_rules();

}  // namespace aj
