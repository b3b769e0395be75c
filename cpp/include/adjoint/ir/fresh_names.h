// FreshNames: name hints for the vars a pass binds ("lv", "lv_1", ...) that
// no var of the function it rewrites carries, so the user's vars keep their
// names in the printed text and in lookups by name (Gradient's
// require_grads). The function's names are gathered on the first request: a
// pass that binds nothing new pays nothing.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>

#include "adjoint/ir/function.h"

namespace aj {

class FreshNames {
 public:
  // `fn` must outlive this (its names are read in place).
  explicit FreshNames(const FunctionNode& fn) : fn_(fn) {}

  // The next of "lv", "lv_1", "lv_2", ... that no var of the function has.
  std::string next() {
    if (!gathered_) gather();
    while (true) {
      std::string name = count_ == 0 ? std::string("lv") : "lv_" + std::to_string(count_);
      ++count_;
      if (!taken_.count(name)) return name;
    }
  }

 private:
  void gather() {
    taken_.reserve(fn_.params().size() + fn_.bindings().size());
    for (const Var& p : fn_.params()) taken_.insert(p->name_hint());
    for (const Binding& b : fn_.bindings())
      if (b.var) taken_.insert(b.var->name_hint());
    gathered_ = true;
  }

  const FunctionNode& fn_;
  std::unordered_set<std::string_view> taken_;
  bool gathered_ = false;
  size_t count_ = 0;
};

}  // namespace aj
