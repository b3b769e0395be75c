// CombineParallelMatmul (DESIGN.md §7): matmuls that share one operand
// become one matmul over the concatenation of their other operands,
// followed by one split whose parts are bound to the branches' own vars (so
// their names and uses stay). The rewrites, one per row of rewrite_table()
// below, which Python shows as CombineParallelMatmul.rules:
//
//   matmul(x, w1), ..., matmul(x, wB)  -> split(matmul(x, concat((w1, ..., wB), axis=-1)), axis=-1)
//   matmul(a1, w), ..., matmul(aB, w)  -> split(matmul(concat((a1, ..., aB), axis=-2), w), axis=-2)
//   add(branch_i, b_i) on every branch -> add(combined, concat((b1, ..., bB))), or add(combined, b)
//                                         for one b the same along the split axis, before the split
//   act(branch_i) on every branch      -> act(combined) before the split (relu, gelu, silu)
//
// When a group is combined (the decisions are the predicates below):
//   - its matmuls share the operand as a var, have the same result dtype,
//     and their other operands have rank >= 2 and equal batch dims (a 1-D
//     operand has no axis to concatenate along: that matmul is left alone);
//     widths along the split axis may be symbolic (split takes symbolic
//     indices);
//   - no branch's other operand depends on a branch's result (the combined
//     matmul would then depend on itself): such branches are left alone;
//   - check(shared, others), when given, accepts it;
//   - a bias add (either operand order) or an activation that is the only
//     use of every branch's result is fused when every branch has one and
//     the biases join: then they go before the split, else they stay after
//     it, per branch.
//
// Algorithm:
//   0. Levels: each binding's depth (longest path from the params) and
//      height (longest path to a binding nothing uses), one pass each way.
//   1. Groups sharing the LHS: the matmuls of each LHS var, by the batch
//      dims of their RHS and their result dtype, in binding order.
//   2. For each group: extend each branch through its only uses; find which
//      operands and biases the branches' results may reach: a path from r to
//      o needs depth(r) < depth(o) and height(r) > height(o), so most are
//      ruled out at once (the results sorted by depth, with running maximum
//      heights); the rest are settled by one forward sweep from the first
//      branch to the last of them while the sweeps' budget (4 bindings per
//      binding of the function) lasts, else counted as reached (never
//      wrong; a group is then left alone that could have been combined);
//      keep the branches whose operands are not reached; ask check; decide
//      what to fuse; build the combined bindings.
//   3. The same for groups sharing the RHS, from the matmuls not combined.
//   4. Rebuild (transform/binding_order.h): each group's bindings go where
//      its last branch ended; when an earlier branch's result is used before
//      that, one stable dependency order moves the uses after them. Groups
//      that together would form a cycle (one's operands computed from
//      another's results and the other way round) are left alone.
// Linear in the function's size, but for sorting each group's results by
// depth (B log B for B branches).
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/fresh_names.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/op/linalg.h"
#include "adjoint/op/ops.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/binding_order.h"
#include "adjoint/transform/common_values.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

const std::vector<std::pair<std::string, std::string>>& rewrite_table() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"shared_lhs", "matmul(x, w1), ..., matmul(x, wB) -> split(matmul(x, concat((w1, ..., wB), axis=-1)), axis=-1)"},
      {"shared_rhs", "matmul(a1, w), ..., matmul(aB, w) -> split(matmul(concat((a1, ..., aB), axis=-2), w), axis=-2)"},
      {"bias", "add(branch_i, b_i) on every branch -> add(combined, concat((b1, ..., bB))) before the split, "
               "or add(combined, b) for one b the same along the split axis"},
      {"activation", "act(branch_i) on every branch -> act(combined) before the split, act one of relu, gelu, silu"},
  };
  return table;
}

enum class Side { kLhs, kRhs };  // the operand a group's matmuls share

// The sweeps that settle whether a branch's operand is computed from
// another branch look at most this many bindings per binding of the
// function, in all (see step 2 above).
constexpr int64_t kSweepBudgetPerBinding = 4;

// One matmul of a group, and the bias add and activation that follow it
// alone (positions of bindings; -1 when absent).
struct Branch {
  uint32_t matmul = 0;
  int64_t add = -1;
  Expr bias;         // the add's other operand
  int64_t act = -1;  // of the add, or of the matmul when there is no add
};

struct Group {
  Side side;
  std::vector<Branch> branches;
};

// What the matmuls of a group have in common: the shared var, the result
// dtype and the batch dims (all but the last two) of the other operand.
struct GroupKey {
  const VarNode* shared;
  DType dtype;
  const TypeNode* other;  // a branch's other operand

  static size_t batch_rank(const TypeNode* t) { return t->ndim() - 2; }
  bool operator==(const GroupKey& k) const {
    if (shared != k.shared || dtype != k.dtype) return false;
    if (other == k.other) return true;  // types are interned
    if (other->ndim() != k.other->ndim()) return false;
    for (size_t d = 0; d < batch_rank(other); ++d)
      if (other->shape()[d] != k.other->shape()[d]) return false;
    return true;
  }
  struct Hash {
    size_t operator()(const GroupKey& k) const {
      size_t h = hash_combine(std::hash<const void*>()(k.shared), static_cast<size_t>(k.dtype));
      h = hash_combine(h, k.other->ndim());
      for (size_t d = 0; d < batch_rank(k.other); ++d) h = hash_combine(h, k.other->shape()[d].hash());
      return h;
    }
  };
};

// What goes between the combined matmul and the split.
struct Fusion {
  enum class Bias { kNone, kShared, kConcat } bias = Bias::kNone;
  int64_t bias_axis = 0;   // the biases' concat axis (kConcat)
  const CallNode* act = nullptr;  // one of the branches' activations
};

bool is_activation(const CallNode* c) {
  return is_call_of(c, ops::relu) || is_call_of(c, ops::gelu) || is_call_of(c, ops::silu);
}

size_t side_arg(Side side) { return side == Side::kLhs ? 0 : 1; }

class Combiner {
 public:
  Combiner(const Function& fn, const ParallelMatmulCheck& check)
      : fn_(fn), bindings_(fn->bindings()), index_(*fn), names_(*fn), check_(check),
        taken_(bindings_.size(), 0), reached_(bindings_.size(), 0),
        sweep_budget_(kSweepBudgetPerBinding * static_cast<int64_t>(bindings_.size())) {
    measure_levels();
  }

  Function run() {
    for (Side side : {Side::kLhs, Side::kRhs})
      for (Group& g : collect(side)) combine(g);
    if (blocks_.empty()) return fn_;
    std::vector<uint8_t> applied;
    Function out = replace_bindings(index_, blocks_, &applied);
    for (size_t i = 0; i < applied.size(); ++i)
      if (applied[i]) count_group(counts_[i]);
    return out;
  }

 private:
  // ---- reading the function ----

  const CallNode* call_at(int64_t p) const { return as<CallNode>(bindings_[static_cast<size_t>(p)].value); }
  const CallNode* matmul(const Branch& b) const { return call_at(b.matmul); }
  const Var& var_at(int64_t p) const { return bindings_[static_cast<size_t>(p)].var; }

  // The binding that is v's only use (not the return's), or -1.
  int64_t only_use(const VarNode* v) const {
    if (index_.num_users(v) != 1 || index_.used_by_return(v)) return -1;
    int64_t p = index_.users(v).front();
    return taken_[static_cast<size_t>(p)] ? -1 : p;
  }

  // ---- 0. levels ----

  // depth_: 0 for a binding of params and constants only, else one more
  // than its deepest operand's; height_: 0 for a binding nothing uses, else
  // one more than its highest user's.
  void measure_levels() {
    size_t n = bindings_.size();
    depth_.assign(n, 0);
    height_.assign(n, 0);
    for (size_t p = 0; p < n; ++p)
      for_each_var_use(bindings_[p].value, [&](const VarNode* v) {
        int64_t q = index_.binding_index(v);
        if (q >= 0) depth_[p] = std::max(depth_[p], depth_[static_cast<size_t>(q)] + 1);
      });
    for (size_t p = n; p-- > 0;)
      for_each_var_use(bindings_[p].value, [&](const VarNode* v) {
        int64_t q = index_.binding_index(v);
        if (q >= 0) height_[static_cast<size_t>(q)] = std::max(height_[static_cast<size_t>(q)], height_[p] + 1);
      });
  }

  // ---- 1. grouping ----

  // The groups of `side` among the matmuls not combined yet: one per
  // shared var, result dtype and batch dims of the other operand, each of
  // two matmuls or more, in the order of their first matmuls.
  std::vector<Group> collect(Side side) const {
    std::vector<Group> groups;
    std::unordered_map<GroupKey, size_t, GroupKey::Hash> by_key;
    for (size_t p = 0; p < bindings_.size(); ++p) {
      const CallNode* c = call_at(static_cast<int64_t>(p));
      if (taken_[p] || !is_call_of(c, ops::matmul)) continue;
      const VarNode* shared = as<VarNode>(c->args()[side_arg(side)]);
      const TypeNode* other = c->args()[1 - side_arg(side)]->type().get();
      if (!shared || other->ndim() < 2) continue;
      auto [it, added] = by_key.emplace(GroupKey{shared, c->type()->dtype(), other}, groups.size());
      if (added) groups.push_back(Group{side, {}});
      Branch branch;
      branch.matmul = static_cast<uint32_t>(p);
      groups[it->second].branches.push_back(std::move(branch));
    }
    std::vector<Group> parallel;
    for (Group& g : groups)
      if (g.branches.size() >= 2) parallel.push_back(std::move(g));
    return parallel;
  }

  // ---- 2. one group ----

  void combine(Group& g) {
    for (Branch& b : g.branches) extend(b);
    uint32_t serial = ++serial_;
    find_reached(g, serial);
    std::vector<Branch> kept;
    for (const Branch& b : g.branches)
      if (!reached(other_operand(g, b), serial)) kept.push_back(b);
    if (kept.size() < 2 || !widths_add_up(g.side, kept) || !accepted_by_check(g.side, kept)) return;
    Fusion fusion = decide_fusion(g.side, kept, serial);
    make_block(g.side, kept, fusion);
    counts_.push_back({g.side, kept.size(), fusion.bias != Fusion::Bias::kNone, fusion.act != nullptr});
  }

  // Whether the branches' widths have a sum, the width of the combined
  // matmul: symbolic widths (n and 9223372036854775807*n) may add up to a
  // coefficient past int64, and such a group is left alone, as the pass
  // leaves alone what it cannot combine.
  bool widths_add_up(Side side, const std::vector<Branch>& kept) const {
    try {
      Dim total(0);
      for (const Branch& b : kept) total = total + width(side, b);
      return true;
    } catch (const TypeInferenceError&) {
      return false;
    }
  }

  // What Pass.explain reports of a combined group: its rewrite (a row of
  // rewrite_table()), the fusions, and how many branches it joined. Counted
  // once the group is known to be in the output (replace_bindings leaves
  // out groups that would form a cycle together).
  struct GroupCount {
    Side side;
    size_t branches;
    bool bias, act;
  };
  static void count_group(const GroupCount& c) {
    count_pass_stat(c.side == Side::kLhs ? "shared_lhs" : "shared_rhs");
    if (c.bias) count_pass_stat("bias");
    if (c.act) count_pass_stat("activation");
    count_pass_stat("branches combined", static_cast<int64_t>(c.branches));
  }

  // b's bias add and activation: each the only use of what it follows.
  void extend(Branch& b) const {
    const Var& result = var_at(b.matmul);
    int64_t next = only_use(result.get());
    const CallNode* c = next < 0 ? nullptr : call_at(next);
    if (is_call_of(c, ops::add) && (c->args()[0] == result) != (c->args()[1] == result) &&
        type_equal(c->type(), result->type())) {  // a bias that does not broadcast the result larger
      b.add = next;
      b.bias = c->args()[c->args()[0] == result ? 1 : 0];
      next = only_use(var_at(next).get());
      c = next < 0 ? nullptr : call_at(next);
    }
    if (is_activation(c)) b.act = next;
  }

  const Expr& other_operand(const Group& g, const Branch& b) const {
    return matmul(b)->args()[1 - side_arg(g.side)];
  }

  // Marks (with serial) the branches' results and the operands and biases
  // of the group they may reach (see step 2 above).
  void find_reached(const Group& g, uint32_t serial) {
    std::vector<std::pair<uint32_t, uint32_t>> results;  // (depth, height), by depth
    int64_t first = static_cast<int64_t>(bindings_.size());
    for (const Branch& b : g.branches) {
      reached_[b.matmul] = serial;
      results.emplace_back(depth_[b.matmul], height_[b.matmul]);
      first = std::min<int64_t>(first, b.matmul);
    }
    std::sort(results.begin(), results.end());
    for (size_t i = 1; i < results.size(); ++i)
      results[i].second = std::max(results[i].second, results[i - 1].second);
    auto may_be_reached = [&](int64_t p) {  // some result r: depth(r) < depth(p) and height(r) > height(p)
      if (p < first || reached_[static_cast<size_t>(p)] == serial) return false;
      auto shallower = std::lower_bound(results.begin(), results.end(),
                                        std::make_pair(depth_[static_cast<size_t>(p)], uint32_t{0}));
      return shallower != results.begin() && std::prev(shallower)->second > height_[static_cast<size_t>(p)];
    };
    std::vector<int64_t> open;
    for (const Branch& b : g.branches)
      for (const Expr* e : {&other_operand(g, b), b.add >= 0 ? &b.bias : nullptr})
        if (e && may_be_reached(position(*e))) open.push_back(position(*e));
    if (open.empty()) return;
    int64_t last = *std::max_element(open.begin(), open.end());
    if (last - first <= sweep_budget_) {
      sweep_budget_ -= last - first;
      sweep(first, last, serial);
    } else {
      for (int64_t p : open) reached_[static_cast<size_t>(p)] = serial;
    }
  }

  // Marks (with serial) every binding from first to last that uses a
  // marked var.
  void sweep(int64_t first, int64_t last, uint32_t serial) {
    for (int64_t p = first; p <= last; ++p) {
      if (reached_[static_cast<size_t>(p)] == serial) continue;
      for_each_var_use(bindings_[static_cast<size_t>(p)].value, [&](const VarNode* v) {
        if (reached(v, serial)) reached_[static_cast<size_t>(p)] = serial;
      });
    }
  }

  // The position of the binding of e (a var), or -1 (params, constants).
  int64_t position(const Expr& e) const {
    const VarNode* v = as<VarNode>(e);
    return v ? index_.binding_index(v) : -1;
  }
  bool reached(const VarNode* v, uint32_t serial) const {
    int64_t p = index_.binding_index(v);
    return p >= 0 && reached_[static_cast<size_t>(p)] == serial;
  }
  bool reached(const Expr& e, uint32_t serial) const {
    const VarNode* v = as<VarNode>(e);
    return v && reached(v, serial);
  }

  bool accepted_by_check(Side side, const std::vector<Branch>& kept) const {
    if (!check_) return true;
    ParallelMatmuls group{side == Side::kLhs, matmul(kept.front())->args()[side_arg(side)], {}};
    for (const Branch& b : kept) group.others.push_back(matmul(b)->args()[1 - side_arg(side)]);
    return check_(group);
  }

  // ---- fusion ----

  // The split axis of a group's results (non-negative): the RHS's columns,
  // or the LHS's rows (the last axis when the shared RHS is 1-D).
  size_t split_axis(Side side, const Branch& b) const {
    const CallNode* c = matmul(b);
    size_t rank = c->type()->ndim();
    return side == Side::kLhs || c->args()[1]->type()->ndim() == 1 ? rank - 1 : rank - 2;
  }

  Fusion decide_fusion(Side side, const std::vector<Branch>& kept, uint32_t serial) const {
    Fusion f;
    bool any_add = false, all_add = true;
    for (const Branch& b : kept) {
      any_add |= b.add >= 0;
      all_add &= b.add >= 0 && !reached(b.bias, serial);
    }
    if (all_add) f.bias = join_biases(side, kept, &f.bias_axis);
    if (any_add && f.bias == Fusion::Bias::kNone) return f;  // activations follow adds that stay
    const CallNode* act = kept.front().act >= 0 ? call_at(kept.front().act) : nullptr;
    for (const Branch& b : kept)
      if (!act || b.act < 0 || &call_at(b.act)->op() != &act->op()) return f;
    f.act = act;
    return f;
  }

  // How the branches' biases join into one bias of the combined result:
  // kShared when they are one value whose dim along the split axis is 1 or
  // absent; kConcat when they have one rank, each its branch's width along
  // the split axis and equal dims elsewhere; else kNone.
  Fusion::Bias join_biases(Side side, const std::vector<Branch>& kept, int64_t* axis) const {
    const Expr& first = kept.front().bias;
    const Shape& shape = first->type()->shape();
    int64_t out_rank = static_cast<int64_t>(matmul(kept.front())->type()->ndim());
    int64_t at = static_cast<int64_t>(split_axis(side, kept.front())) - (out_rank - static_cast<int64_t>(shape.size()));
    bool one_value = true;
    for (const Branch& b : kept) one_value &= same_value(b.bias, first);
    if (one_value && (at < 0 || shape[static_cast<size_t>(at)] == Dim(1))) return Fusion::Bias::kShared;
    if (at < 0) return Fusion::Bias::kNone;
    for (const Branch& b : kept) {
      const Shape& s = b.bias->type()->shape();
      if (s.size() != shape.size()) return Fusion::Bias::kNone;
      for (size_t d = 0; d < s.size(); ++d) {
        bool ok = static_cast<int64_t>(d) == at ? s[d] == width(side, b) : s[d] == shape[d];
        if (!ok) return Fusion::Bias::kNone;
      }
    }
    *axis = at;
    return Fusion::Bias::kConcat;
  }

  static bool same_value(const Expr& a, const Expr& b) {
    if (a == b) return true;
    const auto* ca = as<ConstantNode>(a);
    const auto* cb = as<ConstantNode>(b);
    return ca && cb && cse::constants_equal(*ca, *cb);
  }

  Dim width(Side side, const Branch& b) const { return matmul(b)->type()->shape()[split_axis(side, b)]; }

  // ---- building the combined bindings ----

  // The group's bindings: concat, matmul, bias and activation if fused,
  // split, and each branch's last var bound to its part. They replace the
  // branches' bindings and go where the last of them was.
  void make_block(Side side, const std::vector<Branch>& kept, const Fusion& fusion) {
    Block block(names_);
    const CallNode* first = matmul(kept.front());
    std::vector<Expr> others;
    for (const Branch& b : kept) others.push_back(matmul(b)->args()[1 - side_arg(side)]);
    int64_t operand_axis = static_cast<int64_t>(others.front()->type()->ndim()) - (side == Side::kLhs ? 1 : 2);
    Expr joined = block.bind(ops::concat({std::make_shared<TupleNode>(std::move(others))}, {{"axis", operand_axis}}));
    const Expr& shared = first->args()[side_arg(side)];
    Expr out = block.bind(combined_matmul(side == Side::kLhs ? std::vector<Expr>{shared, joined}
                                                                 : std::vector<Expr>{joined, shared},
                                          kept));
    if (fusion.bias != Fusion::Bias::kNone) out = block.bind(ops::add({out, joined_bias(kept, fusion, block)}));
    if (fusion.act) out = block.bind(make_call(fusion.act->op(), {out}, fusion.act->attrs()));
    Expr parts = block.bind(ops::split({out}, {{"indices_or_sections", split_points(side, kept)},
                                               {"axis", static_cast<int64_t>(split_axis(side, kept.front()))}}));
    for (size_t i = 0; i < kept.size(); ++i)
      block.bind_to(var_at(claim(kept[i], fusion, block)),
                    std::make_shared<TupleGetItemNode>(parts, static_cast<int>(i)));
    blocks_.push_back(std::move(block));
  }

  // A BindingBlock being built.
  struct Block : BindingBlock {
    explicit Block(FreshNames& names) : names(names) {}
    Var bind(Expr value) {
      Var v = std::make_shared<VarNode>(names.next(), value->type());
      bindings.push_back(Binding{v, std::move(value)});
      return v;
    }
    void bind_to(const Var& var, Expr value) {
      if (!type_equal(var->type(), value->type()))
        throw TransformError(str("CombineParallelMatmul: the part of the combined matmul for '", var->name_hint(),
                                 "' has type ", value->type()->to_string(), ", not ", var->type()->to_string()));
      bindings.push_back(Binding{var, std::move(value)});
    }
    FreshNames& names;
  };

  // matmul(args) with the branches' out_dtype, or their result dtype as
  // out_dtype when they give it differently (None and the operands' dtype).
  Call combined_matmul(std::vector<Expr> args, const std::vector<Branch>& kept) const {
    const CallNode* first = matmul(kept.front());
    for (const Branch& b : kept)
      if (matmul_out_dtype(*matmul(b)) != matmul_out_dtype(*first))
        return ops::matmul(std::move(args), {{"out_dtype", first->type()->dtype()}});
    return make_call(first->op(), std::move(args), first->attrs());
  }

  Expr joined_bias(const std::vector<Branch>& kept, const Fusion& fusion, Block& block) const {
    if (fusion.bias == Fusion::Bias::kShared) return kept.front().bias;
    std::vector<Expr> biases;
    for (const Branch& b : kept) biases.push_back(b.bias);
    return block.bind(ops::concat({std::make_shared<TupleNode>(std::move(biases))}, {{"axis", fusion.bias_axis}}));
  }

  // Where the parts end along the split axis, but the last: ints when every
  // width is static, dims otherwise.
  AttrValue split_points(Side side, const std::vector<Branch>& kept) const {
    Shape points;
    bool all_static = true;
    Dim at(0);
    for (size_t i = 0; i + 1 < kept.size(); ++i) {
      at = at + width(side, kept[i]);
      all_static &= at.is_const();
      points.push_back(at);
    }
    if (!all_static) return points;
    std::vector<int64_t> ints;
    for (const Dim& d : points) ints.push_back(d.value());
    return ints;
  }

  // Marks the branch's bindings that the block replaces as taken (so no
  // later group uses them) and returns the position of the last one.
  int64_t claim(const Branch& b, const Fusion& fusion, Block& block) {
    int64_t last = b.matmul;
    auto take = [&](int64_t p) {
      taken_[static_cast<size_t>(p)] = 1;
      block.replaced.push_back(p);
      last = std::max(last, p);
    };
    take(b.matmul);
    if (fusion.bias != Fusion::Bias::kNone) take(b.add);
    if (fusion.act) take(b.act);
    return last;
  }

  const Function& fn_;
  const std::vector<Binding>& bindings_;
  DataflowIndex index_;
  FreshNames names_;  // for the vars the blocks bind
  const ParallelMatmulCheck& check_;
  std::vector<uint8_t> taken_;     // by position: replaced by a group's block
  std::vector<uint32_t> reached_;  // by position: the serial of the last group whose results reach it
  std::vector<uint32_t> depth_, height_;  // by position (step 0)
  int64_t sweep_budget_;           // bindings the sweeps may still look at
  std::vector<BindingBlock> blocks_;
  std::vector<GroupCount> counts_;  // by block
  uint32_t serial_ = 0;
};

}  // namespace

const std::vector<std::pair<std::string, std::string>>& combine_parallel_matmul_rewrites() { return rewrite_table(); }

Function combine_parallel_matmul(const Function& fn, const ParallelMatmulCheck& check) {
  return Combiner(fn, check).run();
}

Module combine_parallel_matmul(const Module& mod, const ParallelMatmulCheck& check) {
  verify_input(mod, "CombineParallelMatmul");
  return map_functions(mod, [&check](const Function& fn) { return combine_parallel_matmul(fn, check); });
}

}  // namespace aj
