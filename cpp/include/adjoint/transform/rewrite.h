// Rewriting calls by rules, binding by binding. A rule looks at one call
// (and, through the context, at what its arguments are bound to) and returns
// a replacement: a leaf, or a tree of calls built with make(), whose nested
// calls become new bindings. Rules are plain data (a name, the before ->
// after it stands for, a function for the match and its side conditions),
// so rule sets are lists that combine.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/op/registry.h"

namespace aj {

// What the rewriter knows of each var: the leaf that now stands for it (when
// it was rewritten away) and the call it is bound to (when it is).
struct RewriteVar {
  Expr replaced;
  const CallNode* call = nullptr;
};

class RewriteContext {
 public:
  explicit RewriteContext(const VarTable<RewriteVar>& vars) : vars_(vars) {}
  // The call bound to e when e is a var bound to a call, else nullptr.
  const CallNode* bound_call(const Expr& e) const;
  // The call bound to e when it is a call of `op`, else nullptr.
  const CallNode* bound_call(const Expr& e, OpHandle op) const;
  // op(args, attrs) as an unbound call (defaults filled, type inferred).
  Expr make(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs = {}) const;

 private:
  const VarTable<RewriteVar>& vars_;
};

struct RewriteRule {
  const char* name;
  const char* before_after;  // "permute_dims(permute_dims(x)) -> x"
  Expr (*apply)(const CallNode& call, const RewriteContext& ctx);  // nullptr: no match
};

// Rewrites each binding, in order, with the first rule that matches, and
// each call of a replacement likewise, until no rule matches anywhere (one
// pass suffices: a rule sees only a call and earlier, final bindings).
// Bindings left unused are not removed: run dead-code elimination after.
// With share_values, equal values are bound once as they are bound (what
// EliminateCommonSubexpr would do after, in the same pass).
Function rewrite_bindings(const Function& fn, const std::vector<RewriteRule>& rules, bool share_values = false);
Module rewrite_bindings(const Module& mod, const std::vector<RewriteRule>& rules);

}  // namespace aj
