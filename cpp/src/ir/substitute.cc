// Module-wide function maps (ir/substitute.h).
#include "adjoint/ir/substitute.h"

namespace aj {

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
