// The module-to-module passes of cpp/src/transform/, each a pure function
// over immutable IR. Each takes a well-formed module: the Python bindings
// verify it first (verify_input, analysis/verifier.h), so malformed IR built
// in Python is a VerifyError naming the pass, never a failure inside one.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/analysis/dim_bounds.h"
#include "adjoint/ir/function.h"

namespace aj {

class RuleSet;  // pattern/rule.h

// Removes bindings whose values nothing returns or uses (all ops are pure),
// in every function.
Module dead_code_elimination(const Module& mod);
Function dead_code_elimination(const Function& fn);
// The same for a function the caller made and drops: its live bindings are
// moved into the result when nothing else holds it.
Function dead_code_elimination(Function&& fn);

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

// CombineParallelMatmul: matmuls sharing one operand (a var) become one
// matmul over the concatenation of their other operands, then one split
// whose parts are bound to the branches' vars; a bias add and an activation
// that every branch has go before the split. The rules, the conditions and
// the algorithm are at the top of combine_parallel_matmul.cc. In every
// function; `check`, when given, may refuse a group.
struct ParallelMatmuls {
  bool shares_lhs;            // matmul(shared, other_i), else matmul(other_i, shared)
  Expr shared;
  std::vector<Expr> others;  // in branch order
};
using ParallelMatmulCheck = std::function<bool(const ParallelMatmuls& group)>;
Module combine_parallel_matmul(const Module& mod, const ParallelMatmulCheck& check = nullptr);
Function combine_parallel_matmul(const Function& fn, const ParallelMatmulCheck& check = nullptr);
// Its rewrites: (name, "before -> after"), one per kind.
const std::vector<std::pair<std::string, std::string>>& combine_parallel_matmul_rewrites();

// LiftTransformParams: for each function f with num_input, a new function
// f_transform_params(weights...) returning the tuple of the weight-dependent
// compile-time values f needs (and the weights f uses directly), added after
// f (named f_transform_params_1, ... when the name is taken); f then takes
// (inputs..., transformed...), keeping num_input. Bindings that use no
// weight stay where they are used, in either function or both; dead code
// leaves both. Functions without num_input are unchanged. The algorithm is
// at the top of lift_transform_params.cc.
Module lift_transform_params(const Module& mod);

// ReassociateMatmul: rewrites between matmul(add(W, matmul(B, A)), x) and
// add(matmul(W, x), matmul(B, matmul(A, x))) (and the forms with x on the
// left), and re-brackets matmul chains, to the form estimate_flops counts
// cheapest with compile-time work free, when that holds for every dim value
// within `bounds` (else the input form stays); then dead-code elimination.
// TransformError when `bounds` names a symbol no function uses. The rules
// and the algorithm are at the top of reassociate_matmul.cc.
Module reassociate_matmul(const Module& mod, const DimBounds& bounds = {});
Function reassociate_matmul(const Function& fn, const DimBounds& bounds = {});
// Its rewrites: (name, "before <-> after"), one per kind.
const std::vector<std::pair<std::string, std::string>>& reassociate_matmul_rewrites();

}  // namespace aj
