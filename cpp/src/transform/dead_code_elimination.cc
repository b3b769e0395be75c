// DeadCodeElimination: one backward sweep per function.
//   1. Mark the vars the returned expr uses.
//   2. Walk the bindings backward; a binding whose var is marked is kept and
//      marks the vars its value uses; an unmarked one is dropped.
//   3. Rebuild the function from the kept bindings, in their order.

#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

// Marks every var `e` uses as live, by its definition index.
void mark_uses(const Expr& e, const VarIndexMap& index, std::vector<uint8_t>& live) {
  switch (e->kind()) {
    case ExprKind::kVar: {
      int64_t i = index(static_cast<const VarNode*>(e.get()));
      if (i != VarIndexMap::kAbsent) live[static_cast<size_t>(i)] = 1;
      return;
    }
    case ExprKind::kTuple:
      for (const auto& f : static_cast<const TupleNode&>(*e).fields()) mark_uses(f, index, live);
      return;
    case ExprKind::kTupleGetItem:
      mark_uses(static_cast<const TupleGetItemNode&>(*e).tuple(), index, live);
      return;
    case ExprKind::kCall:
      for (const auto& a : static_cast<const CallNode&>(*e).args()) mark_uses(a, index, live);
      return;
    case ExprKind::kConstant:
      return;
  }
}

}  // namespace

std::vector<uint8_t> live_vars(const FunctionNode& fn, const VarIndexMap& index) {
  const auto& bindings = fn.bindings();
  size_t first = fn.params().size();  // binding i has index first + i
  std::vector<uint8_t> live(first + bindings.size(), 0);
  mark_uses(fn.ret(), index, live);
  for (size_t i = bindings.size(); i-- > 0;)
    if (live[first + i]) mark_uses(bindings[i].value, index, live);
  return live;
}

Function dead_code_elimination(const Function& fn) {
  VarIndexMap index(*fn);
  const auto& bindings = fn->bindings();
  size_t first = fn->params().size();
  std::vector<uint8_t> live = live_vars(*fn, index);
  size_t kept_count = 0;
  for (size_t i = 0; i < bindings.size(); ++i) kept_count += live[first + i];
  if (kept_count == bindings.size()) return fn;
  std::vector<Binding> kept;
  kept.reserve(kept_count);
  for (size_t i = 0; i < bindings.size(); ++i)
    if (live[first + i]) kept.push_back(bindings[i]);
  return std::make_shared<FunctionNode>(fn->params(), std::move(kept), fn->ret(), fn->attrs());
}

Module dead_code_elimination(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return dead_code_elimination(fn); });
}

}  // namespace aj
