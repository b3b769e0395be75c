// ReorderPermuteDimsAfterConcat (DESIGN.md §7): a concat of permute_dims
// calls that all apply one permutation p becomes one permute_dims by p of
// the concat of their inputs, along the axis p maps the concat's axis to.
// One rule, for any number of fields (a `repeated` run); the table at the
// end of this file is the one place it is described. Dead-code elimination
// then removes the permutes left unused.
#include <optional>

#include "adjoint/ir/substitute.h"
#include "adjoint/op/manipulate.h"
#include "adjoint/op/registry.h"
#include "adjoint/pattern/rule.h"
#include "adjoint/transform/passes.h"
#include "adjoint/transform/rewrite.h"

namespace aj {
namespace {

// The permutation every permute in the run applies, or nullopt when two differ.
std::optional<std::vector<int64_t>> common_permutation(const Match& m, const std::vector<Expr>& permutes) {
  std::vector<int64_t> p = permute_dims_permutation(*m.call(permutes.front()));
  for (size_t i = 1; i < permutes.size(); ++i)
    if (permute_dims_permutation(*m.call(permutes[i])) != p) return std::nullopt;
  return p;
}

// The concat's axis, non-negative, for fields of rank n.
size_t concat_axis(const CallNode& concat, size_t n) {
  int64_t axis = std::get<int64_t>(lookup_attr(concat.op(), concat.attrs(), "axis"));
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(n) : axis);
}

// permute_dims(concat((x, ...), axis=p[axis]), p); nullptr when the permutations differ.
Expr permute_after_concat(const Match& m) {
  std::vector<Expr> permutes = m.list("permute");
  std::optional<std::vector<int64_t>> p = common_permutation(m, permutes);
  if (!p) return nullptr;
  int64_t axis = (*p)[concat_axis(*m.call(m.root()), p->size())];
  Expr fields = std::make_shared<TupleNode>(m.list("x"));
  return make_permute_dims(ops::concat({fields}, {{"axis", axis}}), *p);
}

RuleSet make_rules() {
  Pattern permute = is_op(ops::permute_dims)({wildcard().named("x")}).named("permute");
  return RuleSet({
      {"permute_dims_after_concat",
       "concat((permute_dims(x, p), ...), axis) -> permute_dims(concat((x, ...), axis=p[axis]), p), "
       "the same p for every field, any number of fields",
       is_op(ops::concat)({is_tuple({repeated(permute, "permutes")})}), permute_after_concat},
  });
}

}  // namespace

const RuleSet& reorder_permute_dims_after_concat_rules() {
  static const RuleSet rules = make_rules();
  return rules;
}

Module reorder_permute_dims_after_concat(const Module& mod) {
  return map_functions(mod, [](const Function& fn) {
    return dead_code_elimination(rewrite_bindings(fn, reorder_permute_dims_after_concat_rules()));
  });
}

}  // namespace aj
