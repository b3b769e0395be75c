// DeadCodeElimination: one backward sweep per function.
//   1. Mark the vars the returned expr uses.
//   2. Walk the bindings backward; a binding whose var is marked is kept and
//      marks the vars its value uses; an unmarked one is dropped.
//   3. Rebuild the function from the kept bindings, in their order.
#include <unordered_set>

#include "adjoint/ir/substitute.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

void mark_uses(const Expr& e, std::unordered_set<const VarNode*>& live) {
  switch (e->kind()) {
    case ExprKind::kVar:
      live.insert(static_cast<const VarNode*>(e.get()));
      return;
    case ExprKind::kTuple:
      for (const auto& f : static_cast<const TupleNode&>(*e).fields()) mark_uses(f, live);
      return;
    case ExprKind::kTupleGetItem:
      mark_uses(static_cast<const TupleGetItemNode&>(*e).tuple(), live);
      return;
    case ExprKind::kCall:
      for (const auto& a : static_cast<const CallNode&>(*e).args()) mark_uses(a, live);
      return;
    case ExprKind::kConstant:
      return;
  }
}

}  // namespace

Function dead_code_elimination(const Function& fn) {
  std::unordered_set<const VarNode*> live;
  live.reserve(fn->bindings().size() + fn->params().size());
  mark_uses(fn->ret(), live);
  const auto& bindings = fn->bindings();
  std::vector<bool> keep(bindings.size(), false);
  for (size_t i = bindings.size(); i-- > 0;) {
    if (!live.count(bindings[i].var.get())) continue;
    keep[i] = true;
    mark_uses(bindings[i].value, live);
  }
  std::vector<Binding> kept;
  kept.reserve(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i)
    if (keep[i]) kept.push_back(bindings[i]);
  if (kept.size() == bindings.size()) return fn;
  return std::make_shared<FunctionNode>(fn->params(), std::move(kept), fn->ret(), fn->attrs());
}

Module dead_code_elimination(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return dead_code_elimination(fn); });
}

}  // namespace aj
