// FreshNames: name hints for the vars a pass binds ("lv", "lv_1", ...) that
// no var of the function it rewrites carries, so the user's vars keep their
// names in the printed text and in lookups by name (Gradient's
// require_grads). Only the function's names of that form matter: their
// indices are gathered on the first request (a pass that binds nothing new
// pays nothing) and sorted, so each new name costs a step along them, not a
// lookup among all the function's names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

class FreshNames {
 public:
  // `fn` must outlive the first call of next().
  explicit FreshNames(const FunctionNode& fn) : fn_(&fn) {}

  // The next of "lv", "lv_1", "lv_2", ... that no var of the function has.
  std::string next() {
    if (fn_) gather();
    while (taken_at_ < taken_.size() && taken_[taken_at_] <= count_) {
      if (taken_[taken_at_] == count_) ++count_;
      ++taken_at_;
    }
    uint64_t index = count_++;
    return index == 0 ? std::string("lv") : "lv_" + std::to_string(index);
  }

 private:
  // The k of a name next() would give as its k-th: "lv" is 0, "lv_k" is k
  // (k written as to_string writes it, so "lv_0" and "lv_01" are no index).
  // Suffixes past 18 digits are none either: next() never gets that far.
  static std::optional<uint64_t> index_of(std::string_view name) {
    if (name.substr(0, 2) != "lv") return std::nullopt;
    if (name.size() == 2) return 0;
    std::string_view digits = name.substr(2);
    if (digits.size() < 2 || digits.size() > 19 || digits[0] != '_' || digits[1] == '0') return std::nullopt;
    uint64_t k = 0;
    for (char c : digits.substr(1)) {
      if (c < '0' || c > '9') return std::nullopt;
      k = 10 * k + static_cast<uint64_t>(c - '0');
    }
    return k;
  }

  void gather() {
    auto note = [&](const std::string& name) {
      if (auto k = index_of(name)) taken_.push_back(*k);
    };
    for (const Var& p : fn_->params()) note(p->name_hint());
    for (const Binding& b : fn_->bindings())
      if (b.var) note(b.var->name_hint());
    std::sort(taken_.begin(), taken_.end());
    fn_ = nullptr;
  }

  const FunctionNode* fn_;       // until gathered
  std::vector<uint64_t> taken_;  // the indices the function's names take, sorted
  size_t taken_at_ = 0;          // taken_[..taken_at_] are all below count_
  uint64_t count_ = 0;
};

}  // namespace aj
