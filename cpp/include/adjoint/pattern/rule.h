// Rewrite rules as data: a name, the "before -> after" it stands for, a
// pattern for the call it rewrites, and a replacement, any callable (a C++
// function here, a Python function through the bindings). A RuleSet indexes
// its rules by the op of the call their pattern's root can match, so the
// rewriter (transform/rewrite.h) tries a call only against the rules that
// can match it, in the order they were given. Rule sets combine with +.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adjoint/pattern/match.h"

namespace aj {

// What goes in place of the call a rule matched: an expr built from the
// captures with the op handles (ops::matmul({a, b})), so its type is inferred
// afresh; a tree of calls is bound call by call. nullptr leaves the call as
// it is (a side condition the replacement found false).
using Replacement = std::function<Expr(const Match& match)>;

struct Rule {
  std::string name;
  std::string before_after;  // "astype(x, dtype of x) -> x"
  Pattern pattern;           // matches the call to rewrite
  Replacement replacement;
};

class RuleSet {
 public:
  RuleSet() = default;
  // An aj::Error naming the rule when a name is empty or repeated, a pattern
  // or replacement is missing, or a pattern can match no call.
  explicit RuleSet(std::vector<Rule> rules);

  const std::vector<Rule>& rules() const { return rules_; }
  // The positions in rules() of the rules that can match a call of op, in order.
  const std::vector<uint32_t>& rules_for(OpId op) const { return by_op_[static_cast<size_t>(op)]; }

  // This set's rules, then other's (names must stay distinct).
  RuleSet operator+(const RuleSet& other) const;

 private:
  std::vector<Rule> rules_;
  std::vector<std::vector<uint32_t>> by_op_;  // by OpId
};

}  // namespace aj
