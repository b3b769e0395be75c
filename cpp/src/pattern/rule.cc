// Rule sets (pattern/rule.h): checked once when made, then indexed by the op
// of the call each rule's pattern can match (every op for a pattern whose
// root is a wildcard, a negation, ...).
#include "adjoint/pattern/rule.h"

#include <unordered_set>

#include "adjoint/support/error.h"

namespace aj {
namespace {

void check_rule(const Rule& rule, std::unordered_set<std::string>& names) {
  if (rule.name.empty()) throw Error(str("rule '", rule.before_after, "': the rule has no name"));
  std::string what = str("rule '", rule.name, "'");
  if (!names.insert(rule.name).second) throw Error(str(what, ": two rules have this name"));
  if (!rule.pattern) throw Error(str(what, ": the rule has no pattern"));
  if (!rule.replacement) throw Error(str(what, ": the rule has no replacement"));
  if (rule.pattern->kind() == PatternKind::kRepeated)
    throw Error(str(what, ": its pattern ", rule.pattern.to_string(), " is a run; a rule rewrites one call"));
  if (!can_match_call(rule.pattern))
    throw Error(str(what, ": its pattern ", rule.pattern.to_string(), " matches no call; rules rewrite calls"));
}

}  // namespace

RuleSet::RuleSet(std::vector<Rule> rules) : rules_(std::move(rules)), by_op_(kNumOps) {
  std::unordered_set<std::string> names;
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    check_rule(rules_[i], names);
    std::vector<OpId> ops = root_ops(rules_[i].pattern);
    if (ops.empty()) {
      for (auto& bucket : by_op_) bucket.push_back(i);
    } else {
      for (OpId op : ops) by_op_[static_cast<size_t>(op)].push_back(i);
    }
  }
}

RuleSet RuleSet::operator+(const RuleSet& other) const {
  std::vector<Rule> rules = rules_;
  rules.insert(rules.end(), other.rules_.begin(), other.rules_.end());
  return RuleSet(std::move(rules));
}

}  // namespace aj
