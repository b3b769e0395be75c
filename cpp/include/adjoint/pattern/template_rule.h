// Rules written as IR (Python's P.Rewriter.from_text): two functions of one
// signature, `pattern` and `replacement`; every call that looks like the
// pattern's body becomes the replacement's body, with the values matched by
// the pattern's params put in for the replacement's (by position).
//
// The pattern is the pattern function's body read from its returned value
// down, seeing through its bindings:
//   a param               -> a wildcard capture (a param used twice matches one value twice)
//   op(args, attrs)       -> is_op(op)(patterns of the args), with every attr equal to the call's
//   a constant            -> an equal constant (same dtype, shape and bytes)
//   a tuple, t[i]         -> is_tuple(...), is_tuple_get_item(..., i)
//   a var used twice      -> one value matched in both places
// Its returned value must be a call. The params' types are not read: a rule
// written for float32 (3, 3) applies to any operands its ops accept.
//
// The replacement is instantiated per match: its calls are made afresh
// through their ops' type rules (types re-inferred) from the captured values.
// Where that fails to type-check, or gives another type than the matched
// call's, the rule does not fire (a side condition: `astype(x, "float32")
// -> x` fires on float32 x only), so a rule never makes a module ill-typed.
// A replacement returning a param replaces the call by that value. A value
// the replacement uses twice is bound once per use (the rewriter binds
// trees); EliminateCommonSubexpr shares them again.
#pragma once

#include <string>

#include "adjoint/ir/function.h"
#include "adjoint/pattern/rule.h"

namespace aj {

// The rule "pattern -> replacement" named `name`. An aj::Error naming the
// function at fault when the param counts differ, a pattern param is not
// used, the pattern's returned value is no call, the replacement takes an item of a tuple it does not write out
// (the rewriter binds calls, not items), or a body nests calls more than
// kMaxExprDepth deep.
Rule template_rule(std::string name, const Function& pattern, const Function& replacement);

// The rule of a module holding exactly the functions `pattern` and
// `replacement` (an aj::Error naming what is missing or extra); the module
// is verified first (VerifyError).
Rule template_rule(std::string name, const Module& mod);

}  // namespace aj
