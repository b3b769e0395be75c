// EliminateCommonSubexpr: identical pure values bound once.
//   1. Walk the bindings in order, replacing uses of eliminated vars.
//   2. Key each call, tuple and tuple item by its op, attrs and arguments
//      (vars by identity, constants by value); a value whose key was seen
//      before maps its var to the earlier var and is dropped.
//   3. Rebuild the function when anything was dropped.
#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/transform/common_values.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

class Eliminator {
 public:
  explicit Eliminator(const FunctionNode& fn)
      : fn_(fn), seen_(fn.bindings().size(), kept_), replaced_(fn) {}

  Function run() {
    std::vector<Binding>& kept = kept_;
    kept.reserve(fn_.bindings().size());
    for (const auto& b : fn_.bindings()) {
      Expr value = substitute(b.value);
      size_t h = cse::value_key(value);
      if (Var earlier = seen_.find(h, value)) {
        replaced_.set(b.var.get(), earlier);
        count_pass_stat("bindings merged");
        continue;
      }
      seen_.insert(h, kept.size());
      kept.push_back({b.var, value});
    }
    if (!replaced_.any()) return nullptr;
    return std::make_shared<FunctionNode>(fn_.params(), std::move(kept), substitute(fn_.ret()), fn_.attrs());
  }

 private:
  Expr substitute(const Expr& e) const {
    if (!replaced_.any()) return e;
    return aj::substitute(e, [this](const VarNode* v) { return replaced_.find(v); });
  }

  const FunctionNode& fn_;
  std::vector<Binding> kept_;
  cse::SeenValues seen_;
  VarTable<Expr> replaced_;
};

}  // namespace

Function eliminate_common_subexpr(const Function& fn) {
  Function out = Eliminator(*fn).run();
  return out ? out : fn;
}

Module eliminate_common_subexpr(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return eliminate_common_subexpr(fn); });
}

}  // namespace aj
