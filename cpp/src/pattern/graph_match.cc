// The graph matcher (pattern/graph.h, match_graph): candidates per root,
// filed in hash buckets by the values of their key names, and a depth-first
// search over the roots for each free candidate of the first. A binding is
// free, held by the partial match being built, or taken by a match found.
// The buckets are in candidate_buckets.h.
#include <algorithm>
#include <deque>
#include <optional>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/op/registry.h"
#include "adjoint/pattern/graph.h"
#include "adjoint/support/interrupt.h"
#include "adjoint/transform/common_values.h"
#include "candidate_buckets.h"

namespace aj {
namespace {

using graph_candidates::Buckets;
using graph_candidates::kNone;

enum class Held : uint8_t { kFree, kTaken, kHeld };

// Two kept values agree: the same var, equal other values, or one of them
// absent (its root's match left the name out: nothing to agree on).
bool agree(const Expr* a, const Expr* b) { return !a || !b || a == b || cse::value_equal(*a, *b); }

size_t value_hash(const Expr* e) { return e ? cse::value_hash(*e) : 0x51u; }

// Whether `value` is `operand`, or a field (at any depth) of it when it is a tuple.
bool occurs_in(const Expr& value, const Expr& operand) {
  if (cse::value_equal(operand, value)) return true;
  if (auto* t = as<TupleNode>(operand))
    for (const Expr& f : t->fields())
      if (occurs_in(value, f)) return true;
  return false;
}

// What the first of `nodes` that matched captured, or nullptr.
const Expr* find_capture(const Match& m, const std::vector<const PatternNode*>& nodes) {
  for (const Capture& c : m.captures())
    if (c.scope == 0 && std::find(nodes.begin(), nodes.end(), c.pattern) != nodes.end()) return c.expr;
  return nullptr;
}

// Whether a root whose calls are of `ops` (any op when empty) may match
// `value`: roots match calls only, so a root that matches any expr
// (P.wildcard(), ~p) takes no tuple or tuple-item binding.
bool root_may_match(const std::vector<OpId>& ops, const Expr& value) {
  auto* call = as<CallNode>(value);
  return call && (ops.empty() || std::find(ops.begin(), ops.end(), call->op().id) != ops.end());
}

class GraphMatcher {
 public:
  GraphMatcher(const GraphPattern& gp, const DataflowIndex& index, const Bindings& bindings)
      : gp_(gp), index_(index), bindings_(bindings), fn_(index.function()), matcher_(bindings),
        roots_(gp.roots().size()), held_(fn_.bindings().size(), Held::kFree) {}

  std::vector<GraphMatch> run() {
    collect();
    // A root with no candidate rules out every match: say so before a
    // search over the other roots' candidates (which may be long) finds it.
    for (const RootState& rs : roots_)
      if (rs.candidates.empty()) return {};
    for (RootState& rs : roots_) rs.failed_in.assign(rs.candidates.size(), 0);
    alike_ = alike_candidates_agree();
    roots_[0].visit = 1;
    for (uint32_t c = 0; c < roots_[0].candidates.size(); ++c)
      if (try_candidate(0, c)) {
        accept();
        ++roots_[0].visit;  // bindings were taken: a run that failed may now be another
      }
    sort_matches();
    return std::move(matches_);
  }

 private:
  struct Candidate {
    uint32_t binding;
    uint32_t values;  // offset into values_ of the kept names' values, by slot
  };
  struct RootState {
    std::vector<Candidate> candidates;  // in binding order
    uint32_t first_free = 0;            // candidates before it are taken
    Buckets buckets;                    // by key, for a root with key names
    std::vector<uint32_t> loose;        // candidates that left a key name out, in order
    uint32_t loose_first_free = 0;      // those of loose before it are taken
    std::vector<uint32_t> candidate_at;  // by binding; for a root with a users or operands edge
    std::vector<uint32_t> held;          // its candidates in the partial match
    // For a repeated root: the visit in which each candidate was a branch
    // of a run that found no match. Within one visit (one loop over the
    // root's options, the earlier roots fixed) every branch of that run
    // would gather the same run again, and fail again, as its first.
    std::vector<uint32_t> failed_in;
    uint32_t visit = 0;
  };

  const GraphPattern::RootPlan& plan(uint32_t r) const { return gp_.plans()[r]; }
  const Candidate& cand(uint32_t r, uint32_t c) const { return roots_[r].candidates[c]; }
  const Expr* value(uint32_t r, uint32_t c, uint32_t slot) const { return values_[cand(r, c).values + slot]; }
  // The value key slot k of root r has in the partial match: the first
  // captured among its sources' held candidates, or nullptr.
  const Expr* agreed(uint32_t r, size_t k) const {
    for (const GraphPattern::NameSource& s : plan(r).key_sources[k])
      for (uint32_t c : roots_[s.root].held)
        if (const Expr* v = value(s.root, c, s.slot)) return v;
    return nullptr;
  }

  // ---- steps 1 and 2: candidates and buckets ----

  void collect() {
    for (uint32_t r = 0; r < roots_.size(); ++r)
      if (plan(r).users_edge >= 0 || plan(r).operands_edge >= 0) roots_[r].candidate_at.assign(held_.size(), kNone);
    const auto& bindings = fn_.bindings();
    for (uint32_t b = 0; b < bindings.size(); ++b)
      for (uint32_t r = 0; r < roots_.size(); ++r)
        if (root_may_match(plan(r).ops, bindings[b].value) && matcher_.match(gp_.searched(r).pattern, bindings[b].value))
          add_candidate(r, b);
  }

  void add_candidate(uint32_t r, uint32_t b) {
    RootState& rs = roots_[r];
    const Binding& binding = fn_.bindings()[b];
    auto c = static_cast<uint32_t>(rs.candidates.size());
    rs.candidates.push_back({b, static_cast<uint32_t>(values_.size())});
    for (const auto& nodes : plan(r).kept_nodes)
      values_.push_back(kept_value(find_capture(matcher_.result(), nodes), binding));
    if (!rs.candidate_at.empty()) rs.candidate_at[b] = c;
    if (plan(r).key_slots.empty()) return;
    if (has_whole_key(r, c)) rs.buckets.add(own_key_hash(r, c), c);
    else rs.loose.push_back(c);
  }

  bool has_whole_key(uint32_t r, uint32_t c) const {
    for (uint32_t s : plan(r).key_slots)
      if (!value(r, c, s)) return false;
    return true;
  }

  // The binding's value as its var (kept in vars_, whose addresses stay put).
  const Expr* kept_value(const Expr* captured, const Binding& b) {
    if (captured != &b.value) return captured;
    vars_.push_back(b.var);
    return &vars_.back();
  }

  size_t own_key_hash(uint32_t r, uint32_t c) const {
    size_t h = 0;
    for (uint32_t s : plan(r).key_slots) h = hash_combine(h, value_hash(value(r, c, s)));
    return h;
  }

  // The hash of the key the partial match gives root r, or nullopt when it
  // left a key name out (then any candidate may fit).
  std::optional<size_t> held_key_hash(uint32_t r) const {
    size_t h = 0;
    for (size_t k = 0; k < plan(r).key_slots.size(); ++k) {
      const Expr* v = agreed(r, k);
      if (!v) return std::nullopt;
      h = hash_combine(h, value_hash(v));
    }
    return h;
  }

  // ---- step 3: the search ----

  bool free(uint32_t r, uint32_t c) const { return held_[cand(r, c).binding] == Held::kFree; }

  // c is free and agrees with the partial match on its key names (with the
  // earlier roots, and a repeated root's branches held so far).
  bool fits(uint32_t r, uint32_t c) const {
    if (!free(r, c)) return false;
    const auto& p = plan(r);
    for (size_t k = 0; k < p.key_slots.size(); ++k)
      if (!agree(value(r, c, p.key_slots[k]), agreed(r, k))) return false;
    return true;
  }

  bool try_candidate(uint32_t r, uint32_t c) {
    interrupt_.tick();
    if (!fits(r, c) || !in_alike_order(r, c)) return false;
    if (gp_.searched(r).repeated) return roots_[r].failed_in[c] != roots_[r].visit && try_branches(r, c);
    hold(r, c);
    Narrowed narrowed;
    if (narrow_runs(r, narrowed) && uses_hold(r, UINT32_MAX) && onlys_hold_up_to(r, !narrowed.empty()) &&
        extend(r + 1))
      return true;
    widen(narrowed);
    release(r);
    return false;
  }

  // ---- alike roots (graph.h, step 3a) ----

  // Alike roots match the same bindings: their candidate lists are one.
  // (Were they not, the search would take every order, as for other roots.)
  bool alike_candidates_agree() const {
    for (uint32_t r = 0; r < roots_.size(); ++r) {
      int q = plan(r).alike_before;
      if (q < 0) continue;
      const auto& a = roots_[r].candidates;
      const auto& b = roots_[static_cast<uint32_t>(q)].candidates;
      if (a.size() != b.size()) return false;
      for (size_t c = 0; c < a.size(); ++c)
        if (a[c].binding != b[c].binding) return false;
    }
    return true;
  }

  // c comes after the candidate of r's last alike root before it, and
  // enough candidates come after c for the alike roots after r.
  bool in_alike_order(uint32_t r, uint32_t c) const {
    if (!alike_) return true;
    const auto& p = plan(r);
    if (p.alike_before >= 0 && c <= roots_[static_cast<uint32_t>(p.alike_before)].held.front()) return false;
    return p.alike_after == 0 || candidates_after(r, c) >= p.alike_after;
  }

  // At least as many candidates as the alike roots after r may take once r
  // takes c: those after c that agree with c's key (filed after it in its
  // bucket, or leaving a key name out), or all after c.
  uint32_t candidates_after(uint32_t r, uint32_t c) const {
    const RootState& rs = roots_[r];
    if (plan(r).key_slots.empty() || !has_whole_key(r, c)) return static_cast<uint32_t>(rs.candidates.size()) - c - 1;
    auto loose = rs.loose.end() - std::upper_bound(rs.loose.begin(), rs.loose.end(), c);
    return rs.buckets.after(c) + static_cast<uint32_t>(loose);
  }

  // ---- repeated roots narrowed by the edges of later roots ----

  // The branches a repeated root held before narrowing, to put back.
  using Narrowed = std::vector<std::pair<uint32_t, std::vector<uint32_t>>>;

  // Each earlier repeated root that an edge checked at r ties to r keeps
  // only the branches that edge holds for (so a branch the edge rules out
  // leaves the match, as it would had r come first); false when one is
  // left with no branch.
  bool narrow_runs(uint32_t r, Narrowed& narrowed) {
    for (uint32_t q = 0; q < r; ++q) {
      if (!gp_.searched(q).repeated || !has_edge_with(r, q)) continue;
      std::vector<uint32_t>& held = roots_[q].held;
      std::vector<uint32_t> kept;
      for (uint32_t branch : held)
        if (uses_hold_for_branch(r, q, branch)) kept.push_back(branch);
      if (kept.size() == held.size()) continue;
      narrowed.emplace_back(q, held);
      for (uint32_t c : held) held_[cand(q, c).binding] = Held::kFree;
      for (uint32_t c : kept) held_[cand(q, c).binding] = Held::kHeld;
      held = std::move(kept);
      if (held.empty()) return false;
    }
    return true;
  }

  void widen(const Narrowed& narrowed) {
    for (auto it = narrowed.rbegin(); it != narrowed.rend(); ++it) {
      release(it->first);
      for (uint32_t c : it->second) hold(it->first, c);
    }
  }

  const GraphPattern::EdgeSources& ends(uint32_t e) const { return gp_.edge_sources()[e]; }

  // Whether root q is among the sources of an edge's end.
  static bool captures(uint32_t q, const std::vector<GraphPattern::NameSource>& sources) {
    return std::any_of(sources.begin(), sources.end(), [&](const GraphPattern::NameSource& s) { return s.root == q; });
  }

  bool has_edge_with(uint32_t r, uint32_t q) const {
    for (uint32_t e : plan(r).edges)
      if (captures(q, ends(e).from) || captures(q, ends(e).to)) return true;
    return false;
  }

  // The edges checked at r that have an end at q hold as uses for q's
  // candidate `branch`.
  bool uses_hold_for_branch(uint32_t r, uint32_t q, uint32_t branch) const {
    for (uint32_t e : plan(r).edges) {
      const GraphEdge& edge = gp_.edges()[e];
      if (!captures(q, ends(e).from) && !captures(q, ends(e).to)) continue;
      bool ok = all_values(ends(e).from, q, branch, [&](const Expr* f) {
        return all_values(ends(e).to, q, branch, [&](const Expr* t) { return used_at(edge, f, t); });
      });
      if (!ok) return false;
    }
    return true;
  }

  // The `only` edges of r hold; with `narrowed`, those of the earlier roots
  // as well (a narrowed run has fewer bindings to use a value).
  bool onlys_hold_up_to(uint32_t r, bool narrowed) const {
    for (uint32_t k = narrowed ? 0 : r; k <= r; ++k)
      if (!onlys_hold(k)) return false;
    return true;
  }

  // A repeated root: `first` and every other free candidate that fits with
  // it (from where its options come: see for_each_option).
  bool try_branches(uint32_t r, uint32_t first) {
    if (!uses_hold(r, first)) return false;
    hold(r, first);
    auto take = [&](uint32_t c) {
      if (c != first && fits(r, c) && uses_hold(r, c)) hold(r, c);
      return false;
    };
    std::optional<std::vector<uint32_t>> options = edge_options(r);
    if (options) for_each(*options, take);
    else if (!plan(r).key_slots.empty() && has_whole_key(r, first)) scan_key(r, own_key_hash(r, first), take);
    else scan_all(r, take);
    auto& held = roots_[r].held;
    std::sort(held.begin(), held.end(), [&](uint32_t a, uint32_t b) { return cand(r, a).binding < cand(r, b).binding; });
    if (onlys_hold(r) && extend(r + 1)) return true;
    for (uint32_t c : held) roots_[r].failed_in[c] = roots_[r].visit;
    release(r);
    return false;
  }

  bool extend(uint32_t r) {
    if (r == roots_.size()) return true;
    ++roots_[r].visit;
    return for_each_option(r, [&](uint32_t c) { return try_candidate(r, c); });
  }

  // f(c) for the candidates of root r worth trying given the earlier roots,
  // until f returns true; whether it did.
  template <typename F>
  bool for_each_option(uint32_t r, F&& f) {
    const auto& p = plan(r);
    if (!p.key_slots.empty() && p.key_fixed)
      if (std::optional<size_t> key = held_key_hash(r)) return scan_key(r, *key, f);
    if (std::optional<std::vector<uint32_t>> options = edge_options(r)) return for_each(*options, f);
    return scan_all(r, f);
  }

  // The candidates of root r that an edge into it or out of it gives: the
  // users of the edge's source (each branch of it, for a repeated root's),
  // or those among the operands of its target (in a tuple written in the
  // call as well), in candidate order; nullopt when r has no such edge, or
  // the earlier roots left the edge's other end out.
  std::optional<std::vector<uint32_t>> edge_options(uint32_t r) const {
    const auto& p = plan(r);
    if (p.users_edge < 0 && p.operands_edge < 0) return std::nullopt;
    std::vector<uint32_t> options;
    bool known = false;
    if (p.users_edge >= 0) {
      all_values(ends(static_cast<uint32_t>(p.users_edge)).from, UINT32_MAX, UINT32_MAX, [&](const Expr* from) {
        known = known || from;
        const VarNode* v = from ? as<VarNode>(*from) : nullptr;
        if (v)
          for (int64_t b : index_.users(v)) add_option(r, b, options);
        return true;
      });
    } else {
      const GraphEdge& edge = gp_.edges()[static_cast<size_t>(p.operands_edge)];
      all_values(ends(static_cast<uint32_t>(p.operands_edge)).to, UINT32_MAX, UINT32_MAX, [&](const Expr* to) {
        known = known || to;
        if (!to) return true;
        Operands ops = operands(resolve(*to, bindings_));
        for (size_t i = 0; i < ops.size(); ++i)
          if (edge.index < 0 || static_cast<size_t>(edge.index) == i) add_operand_options(r, ops[i], options);
        return true;
      });
    }
    if (!known) return std::nullopt;
    std::sort(options.begin(), options.end());
    options.erase(std::unique(options.begin(), options.end()), options.end());
    return options;
  }

  void add_option(uint32_t r, int64_t binding, std::vector<uint32_t>& options) const {
    uint32_t c = binding < 0 ? kNone : roots_[r].candidate_at[static_cast<size_t>(binding)];
    if (c != kNone) options.push_back(c);
  }

  void add_operand_options(uint32_t r, const Expr& operand, std::vector<uint32_t>& options) const {
    if (auto* v = as<VarNode>(operand)) add_option(r, index_.binding_index(v), options);
    if (auto* t = as<TupleNode>(operand))
      for (const Expr& f : t->fields()) add_operand_options(r, f, options);
  }

  template <typename F>
  static bool for_each(const std::vector<uint32_t>& options, F&& f) {
    for (uint32_t c : options)
      if (f(c)) return true;
    return false;
  }

  bool taken(uint32_t r, uint32_t c) const { return held_[cand(r, c).binding] == Held::kTaken; }

  // f(c) for the candidates filed under `hash` and those that left a key
  // name out, merged in candidate order; each list steps once over the
  // candidates at its front that are taken.
  template <typename F>
  bool scan_key(uint32_t r, size_t hash, F&& f) {
    RootState& rs = roots_[r];
    uint32_t bucket = rs.buckets.find(hash);
    uint32_t c = kNone;
    if (bucket != kNone) {
      uint32_t& head = rs.buckets.first(bucket);
      while (head != kNone && taken(r, head)) head = rs.buckets.next(head);
      c = head;
    }
    auto n = static_cast<uint32_t>(rs.loose.size());
    while (rs.loose_first_free < n && taken(r, rs.loose[rs.loose_first_free])) ++rs.loose_first_free;
    uint32_t l = rs.loose_first_free;
    while (c != kNone || l < n) {
      bool from_bucket = c != kNone && (l == n || c < rs.loose[l]);
      uint32_t next = from_bucket ? c : rs.loose[l++];
      if (from_bucket) c = rs.buckets.next(c);
      if (f(next)) return true;
    }
    return false;
  }

  template <typename F>
  bool scan_all(uint32_t r, F&& f) {
    RootState& rs = roots_[r];
    auto n = static_cast<uint32_t>(rs.candidates.size());
    while (rs.first_free < n && taken(r, rs.first_free)) ++rs.first_free;
    for (uint32_t c = rs.first_free; c < n; ++c)
      if (f(c)) return true;
    return false;
  }

  void hold(uint32_t r, uint32_t c) {
    roots_[r].held.push_back(c);
    held_[cand(r, c).binding] = Held::kHeld;
  }

  void release(uint32_t r) {
    for (uint32_t c : roots_[r].held) held_[cand(r, c).binding] = Held::kFree;
    roots_[r].held.clear();
  }

  // ---- edges ----

  // f(value) for each value an edge's end `name` has in the partial match,
  // from every root that captured it (only candidate `branch` for root r,
  // when it is a branch); f(nullptr) once when they all left it out.
  template <typename F>
  bool all_values(const std::vector<GraphPattern::NameSource>& sources, uint32_t r, uint32_t branch, F&& f) const {
    bool any = false;
    auto each = [&](const GraphPattern::NameSource& s, uint32_t c) {
      const Expr* v = value(s.root, c, s.slot);
      if (!v) return true;
      any = true;
      return f(v);
    };
    for (const GraphPattern::NameSource& s : sources) {
      if (s.root == r && branch != UINT32_MAX) {
        if (!each(s, branch)) return false;
        continue;
      }
      for (uint32_t c : roots_[s.root].held)
        if (!each(s, c)) return false;
    }
    return any || f(nullptr);
  }

  // The edges checked at root r hold as uses (from is an operand of to).
  bool uses_hold(uint32_t r, uint32_t branch) const {
    for (uint32_t e : plan(r).edges) {
      const GraphEdge& edge = gp_.edges()[e];
      bool ok = all_values(ends(e).from, r, branch, [&](const Expr* from) {
        return all_values(ends(e).to, r, branch, [&](const Expr* to) { return used_at(edge, from, to); });
      });
      if (!ok) return false;
    }
    return true;
  }

  // An edge is a use of from's var: a constant (is_const()) is no var, and
  // an equal constant among to's args is no use of it.
  bool used_at(const GraphEdge& edge, const Expr* from, const Expr* to) const {
    if (!from || !to || (*from)->kind() != ExprKind::kVar) return false;
    Operands ops = operands(resolve(*to, bindings_));
    if (edge.index >= 0) return static_cast<size_t>(edge.index) < ops.size() && occurs_in(*from, ops[edge.index]);
    return std::any_of(ops.begin(), ops.end(), [&](const Expr& op) { return occurs_in(*from, op); });
  }

  // The `only` edges checked at root r: from's value is a var that nothing
  // but to's bindings uses (at the edge's arg, when it names one).
  bool onlys_hold(uint32_t r) const {
    for (uint32_t e : plan(r).edges) {
      const GraphEdge& edge = gp_.edges()[e];
      if (!edge.only) continue;
      std::vector<int64_t> to_bindings;
      bool ok = all_values(ends(e).to, r, UINT32_MAX, [&](const Expr* to) {
        const VarNode* v = to ? as<VarNode>(*to) : nullptr;
        int64_t b = v ? index_.binding_index(v) : -1;
        to_bindings.push_back(b);
        return b >= 0 && (edge.index < 0 || only_at(*to, e));
      });
      std::sort(to_bindings.begin(), to_bindings.end());
      ok = ok && all_values(ends(e).from, r, UINT32_MAX, [&](const Expr* from) {
        return from && only_users(*from, to_bindings);
      });
      if (!ok) return false;
    }
    return true;
  }

  // Every value of the edge's source appears in to's value at the edge's arg only.
  bool only_at(const Expr& to, uint32_t e) const {
    const GraphEdge& edge = gp_.edges()[e];
    Operands ops = operands(resolve(to, bindings_));
    return all_values(ends(e).from, UINT32_MAX, UINT32_MAX, [&](const Expr* from) {
      for (size_t i = 0; i < ops.size(); ++i)
        if (i != static_cast<size_t>(edge.index) && occurs_in(*from, ops[i])) return false;
      return true;
    });
  }

  bool only_users(const Expr& from, const std::vector<int64_t>& allowed) const {
    const VarNode* v = as<VarNode>(from);
    if (!v || index_.def_kind(v) == DefKind::kUndefined || index_.used_by_return(v)) return false;
    for (int64_t u : index_.users(v))
      if (!std::binary_search(allowed.begin(), allowed.end(), u)) return false;
    return true;
  }

  // ---- a match found ----

  // The held candidates as a match, each root at its made index.
  void accept() {
    GraphMatch m;
    m.bindings.resize(roots_.size());
    m.captures.resize(roots_.size());
    for (uint32_t r = 0; r < roots_.size(); ++r) {
      uint32_t made = gp_.order()[r];
      for (uint32_t c : roots_[r].held) {
        uint32_t b = cand(r, c).binding;
        held_[b] = Held::kTaken;
        m.bindings[made].push_back(b);
        matcher_.match(gp_.searched(r).pattern, fn_.bindings()[b].value);
        m.captures[made].push_back(matcher_.result());
      }
      roots_[r].held.clear();
    }
    matches_.push_back(std::move(m));
  }

  // In the binding order of the first root made's first branch.
  void sort_matches() {
    std::stable_sort(matches_.begin(), matches_.end(),
                     [](const GraphMatch& a, const GraphMatch& b) { return a.bindings[0][0] < b.bindings[0][0]; });
  }

  const GraphPattern& gp_;
  const DataflowIndex& index_;
  const Bindings& bindings_;
  const FunctionNode& fn_;
  Matcher matcher_;
  std::vector<RootState> roots_;
  std::vector<Held> held_;          // by binding
  std::vector<const Expr*> values_;  // the kept values of every candidate
  std::deque<Expr> vars_;            // binding vars standing for their values in values_
  std::vector<GraphMatch> matches_;
  bool alike_ = false;       // alike roots take candidates in order (in_alike_order)
  InterruptPoll interrupt_;  // asked at each candidate tried
};

}  // namespace

Expr reported_capture(const Expr& captured, const Binding& binding) {
  return &captured == &binding.value ? Expr(binding.var) : captured;
}

std::vector<GraphMatch> match_graph(const GraphPattern& gp, const DataflowIndex& index, const Bindings& bindings) {
  return GraphMatcher(gp, index, bindings).run();
}

}  // namespace aj
