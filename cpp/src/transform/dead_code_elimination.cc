// DeadCodeElimination: the bindings the return does not need, removed.
//   1. Ask the function's dataflow index which bindings are live: one
//      backward sweep from the return that reads nothing of a dead binding
//      (analysis/dataflow.h).
//   2. Rebuild the function from the live bindings, in their order; return
//      it unchanged when all are live. A function the caller made and hands
//      over (Function&&) gives up its live bindings by move.

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {

namespace {

// The function without its dead bindings; the live ones are moved out of
// `fn` when it holds the function alone (FunctionNode::sole_bindings).
Function without_dead(Function fn) {
  const auto& bindings = fn->bindings();
  DataflowIndex index(*fn);
  const std::vector<uint8_t>& live = index.live();
  size_t kept_count = 0;
  for (uint8_t l : live) kept_count += l;
  if (kept_count == bindings.size()) return fn;
  count_pass_stat("bindings removed", static_cast<int64_t>(bindings.size() - kept_count));
  std::vector<Binding> kept;
  kept.reserve(kept_count);
  std::vector<Binding>* own = FunctionNode::sole_bindings(fn);
  for (size_t i = 0; i < bindings.size(); ++i)
    if (live[i]) kept.push_back(own ? std::move((*own)[i]) : bindings[i]);
  return std::make_shared<FunctionNode>(fn->params(), std::move(kept), fn->ret(), fn->attrs());
}

}  // namespace

Function dead_code_elimination(const Function& fn) { return without_dead(fn); }

Function dead_code_elimination(Function&& fn) { return without_dead(std::move(fn)); }

Module dead_code_elimination(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return dead_code_elimination(fn); });
}

}  // namespace aj
