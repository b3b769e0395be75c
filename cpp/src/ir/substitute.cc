// Var substitution and module-wide function maps (ir/substitute.h).
#include "adjoint/ir/substitute.h"

#include "adjoint/support/error.h"

namespace aj {

Expr substitute(const Expr& e, const VarMap& map, bool keep_unmapped) {
  switch (e->kind()) {
    case ExprKind::kVar: {
      auto it = map.find(static_cast<const VarNode*>(e.get()));
      if (it != map.end()) return it->second;
      if (!keep_unmapped)
        throw Error(str("var '", static_cast<const VarNode&>(*e).name_hint(), "' is used before it is bound"));
      return e;
    }
    case ExprKind::kConstant:
      return e;
    case ExprKind::kTuple: {
      const auto& t = static_cast<const TupleNode&>(*e);
      std::vector<Expr> fields;
      bool changed = false;
      for (const auto& f : t.fields()) {
        fields.push_back(substitute(f, map, keep_unmapped));
        changed = changed || fields.back() != f;
      }
      return changed ? std::make_shared<TupleNode>(std::move(fields)) : e;
    }
    case ExprKind::kTupleGetItem: {
      const auto& g = static_cast<const TupleGetItemNode&>(*e);
      Expr t = substitute(g.tuple(), map, keep_unmapped);
      return t == g.tuple() ? e : std::make_shared<TupleGetItemNode>(t, g.index());
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const CallNode&>(*e);
      std::vector<Expr> args;
      bool changed = false;
      for (const auto& a : c.args()) {
        args.push_back(substitute(a, map, keep_unmapped));
        changed = changed || args.back() != a;
      }
      return changed ? std::make_shared<CallNode>(&c.op(), std::move(args), c.attrs(), c.type()) : e;
    }
  }
  return e;
}

Module map_functions(const Module& mod, const std::function<Function(const Function&)>& fn_pass) {
  std::vector<std::pair<std::string, Function>> fns;
  bool changed = false;
  for (const auto& [name, fn] : mod->functions()) {
    Function out = fn_pass(fn);
    changed = changed || out != fn;
    fns.emplace_back(name, out);
  }
  return changed ? std::make_shared<ModuleNode>(std::move(fns)) : mod;
}

}  // namespace aj
