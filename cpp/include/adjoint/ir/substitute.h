// Rebuilding exprs with vars replaced, and applying a function-level pass to
// every function of a module: the two loops every pass needs.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

// e with every var v for which replacement(v) gives a non-null Expr* to a
// non-null expr replaced by it. Nodes with nothing replaced below them are
// kept, not rebuilt. `replacement` is any callable const VarNode* -> const
// Expr* (a VarTable<Expr>'s find, for instance).
template <typename Replacement>
Expr substitute(const Expr& e, const Replacement& replacement);

// A module whose functions are fn_pass(function); the same module when the
// pass returned every function unchanged.
Module map_functions(const Module& mod, const std::function<Function(const Function&)>& fn_pass);

// ---- implementation ----

namespace detail {

// xs with replacements made, into `out`; false (and `out` untouched) when
// nothing changes, so an unchanged node costs no allocation.
template <typename Replacement>
bool substitute_all(const std::vector<Expr>& xs, const Replacement& replacement,
                    std::vector<Expr>& out) {
  for (size_t i = 0; i < xs.size(); ++i) {
    Expr x = substitute(xs[i], replacement);
    if (x == xs[i]) continue;
    out.reserve(xs.size());
    out.assign(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(std::move(x));
    for (size_t j = i + 1; j < xs.size(); ++j) out.push_back(substitute(xs[j], replacement));
    return true;
  }
  return false;
}

}  // namespace detail

template <typename Replacement>
Expr substitute(const Expr& e, const Replacement& replacement) {
  std::vector<Expr> items;
  switch (e->kind()) {
    case ExprKind::kVar: {
      const Expr* r = replacement(static_cast<const VarNode*>(e.get()));
      return r && *r ? *r : e;
    }
    case ExprKind::kConstant:
      return e;
    case ExprKind::kTuple:
      if (!detail::substitute_all(static_cast<const TupleNode&>(*e).fields(), replacement, items)) return e;
      return std::make_shared<TupleNode>(std::move(items));
    case ExprKind::kTupleGetItem: {
      const auto& g = static_cast<const TupleGetItemNode&>(*e);
      Expr t = substitute(g.tuple(), replacement);
      return t == g.tuple() ? e : std::make_shared<TupleGetItemNode>(t, g.index());
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const CallNode&>(*e);
      if (!detail::substitute_all(c.args(), replacement, items)) return e;
      return std::make_shared<CallNode>(&c.op(), std::move(items), c.attrs(), c.type());
    }
  }
  return e;
}

}  // namespace aj
