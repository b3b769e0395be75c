// Graph patterns (pattern/graph.h): checking the roots and edges, and the
// plan the matcher (graph_match.cc) follows: which names each root's
// candidates keep, the key of its buckets and where the key's values come
// from, and the edges checked when it is assigned.
#include "adjoint/pattern/graph.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "adjoint/support/error.h"

namespace aj {

// A root's capture names: those with one value per match of its pattern, and
// those inside runs (one per element); each sorted, unique.
struct GraphRootNames {
  std::vector<std::string> single, in_runs;
};

namespace {

using Names = std::vector<std::string>;  // sorted, unique (sort_unique)
using RootNames = GraphRootNames;

bool contains(const Names& names, const std::string& n) { return std::binary_search(names.begin(), names.end(), n); }

void sort_unique(Names& names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

RootNames root_names(const Pattern& p) {
  RootNames out;
  for (const CaptureName& c : capture_names(p)) (c.is_list ? out.in_runs : out.single).push_back(c.name);
  sort_unique(out.single);
  sort_unique(out.in_runs);
  return out;
}

std::string root_text(const GraphRoot& r) {
  return r.repeated ? str("repeated(", r.pattern.to_string(), ")") : r.pattern.to_string();
}

std::string edge_text(const GraphEdge& e) {
  return str(e.from, e.only ? " only_used_by " : " used_by ", e.to, e.index >= 0 ? str(" (arg ", e.index, ")") : "");
}

void check_root(const GraphRoot& r, size_t i) {
  if (!r.pattern) throw Error(str("graph pattern: root ", i, " is null"));
  if (r.pattern->kind() == PatternKind::kRepeated)
    throw Error(str("graph pattern: root ", i, " (", r.pattern.to_string(), ") is a run; give its element with repeated=true"));
  if (!can_match_call(r.pattern))
    throw Error(str("graph pattern: root ", i, " (", r.pattern.to_string(), ") can match no call"));
}

}  // namespace

GraphPattern::GraphPattern(std::vector<GraphRoot> roots, std::vector<GraphEdge> edges)
    : roots_(std::move(roots)), edges_(std::move(edges)) {
  if (roots_.empty()) throw Error("graph pattern: there is no root");
  for (size_t i = 0; i < roots_.size(); ++i) check_root(roots_[i], i);
  plan();
}

std::unordered_map<std::string, std::vector<const PatternNode*>> nodes_by_name(const Pattern& p) {
  std::unordered_map<std::string, std::vector<const PatternNode*>> out;
  std::unordered_set<const PatternNode*> seen;
  std::vector<const PatternNode*> todo{p.get()};
  while (!todo.empty()) {
    const PatternNode* n = todo.back();
    todo.pop_back();
    if (n->kind() == PatternKind::kRepeated || !seen.insert(n).second) continue;
    if (!n->name().empty()) out[n->name()].push_back(n);
    for (auto it = n->operands().rbegin(); it != n->operands().rend(); ++it) todo.push_back(it->get());
  }
  return out;
}

bool GraphPattern::is_shared(const std::string& name) const { return contains(shared_, name); }

namespace {

// The first place whose root captures n once per match, or -1.
int owner(const std::vector<RootNames>& names, const std::string& n) {
  for (size_t r = 0; r < names.size(); ++r)
    if (contains(names[r].single, n)) return static_cast<int>(r);
  return -1;
}

// The last place whose root captures n once per match, or -1.
int last_owner(const std::vector<RootNames>& names, const std::string& n) {
  for (size_t r = names.size(); r-- > 0;)
    if (contains(names[r].single, n)) return static_cast<int>(r);
  return -1;
}

bool shares_name(const RootNames& a, const RootNames& b) {
  for (const std::string& n : a.single)
    if (contains(b.single, n)) return true;
  return false;
}

bool edge_joins(const GraphEdge& e, const RootNames& a, const RootNames& b) {
  return (contains(a.single, e.from) && contains(b.single, e.to)) ||
         (contains(a.single, e.to) && contains(b.single, e.from));
}

// The search order (graph.h, step 0): made indices by place. A repeated
// root waits only for a plain root: the branches of two repeated roots tied
// by an edge narrow each other in the order they were made.
class SearchOrder {
 public:
  SearchOrder(const std::vector<GraphRoot>& roots, const std::vector<RootNames>& names,
              const std::vector<GraphEdge>& edges)
      : roots_(roots), names_(names), edges_(edges) {
    for (uint32_t r = 0; r < roots.size(); ++r) {
      int target = roots[r].repeated && !tied_to_placed(r) ? first_edge_after(r) : -1;
      if (target >= 0) waiting_.push_back({static_cast<uint32_t>(target), r});
      else place(r);
    }
  }
  std::vector<uint32_t> order() && { return std::move(order_); }

 private:
  bool tied(uint32_t a, uint32_t b) const {
    if (shares_name(names_[a], names_[b])) return true;
    for (const GraphEdge& e : edges_)
      if (edge_joins(e, names_[a], names_[b])) return true;
    return false;
  }
  bool tied_to_placed(uint32_t r) const {
    for (uint32_t p : order_)
      if (tied(r, p)) return true;
    return false;
  }
  // The first later plain root an edge ties r to, or -1.
  int first_edge_after(uint32_t r) const {
    for (uint32_t later = r + 1; later < roots_.size(); ++later) {
      if (roots_[later].repeated) continue;
      for (const GraphEdge& e : edges_)
        if (edge_joins(e, names_[r], names_[later])) return static_cast<int>(later);
    }
    return -1;
  }
  // r, then the roots that waited for it (and those that waited for them).
  void place(uint32_t r) {
    order_.push_back(r);
    for (size_t w = 0; w < waiting_.size(); ++w) {
      if (waiting_[w].first != r) continue;
      uint32_t next = waiting_[w].second;
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(w));
      place(next);
      w = static_cast<size_t>(-1);  // waiting_ changed: look again from its start
    }
  }

  const std::vector<GraphRoot>& roots_;
  const std::vector<RootNames>& names_;
  const std::vector<GraphEdge>& edges_;
  std::vector<uint32_t> order_;
  std::vector<std::pair<uint32_t, uint32_t>> waiting_;  // (the root waited for, the root waiting)
};

// Whether two roots' patterns are alike (graph.h, step 3a): node for node
// the same, but for capture names private to their roots, which must stand
// for each other throughout. A side condition (where) is alike only to
// itself: its predicate cannot be compared. One visit per pair of nodes.
class AlikePatterns {
 public:
  using IsPrivate = std::function<bool(const std::string&)>;
  explicit AlikePatterns(const IsPrivate& is_private) : is_private_(is_private) {}

  bool operator()(const PatternNode& a, const PatternNode& b) {
    if (&a == &b) return true;
    if (!seen_.insert({&a, &b}).second) return true;
    if (a.kind() != b.kind() || a.kind() == PatternKind::kWhere || !same_name(a.name(), b.name())) return false;
    if (a.op() != b.op() || a.index() != b.index() || a.dtype() != b.dtype() || a.shape() != b.shape() ||
        a.text() != b.text() || !same_attrs(a.attrs(), b.attrs()) || a.operands().size() != b.operands().size())
      return false;
    for (size_t i = 0; i < a.operands().size(); ++i)
      if (!(*this)(*a.operands()[i], *b.operands()[i])) return false;
    return true;
  }

 private:
  bool same_name(const std::string& a, const std::string& b) {
    bool pa = !a.empty() && is_private_(a), pb = !b.empty() && is_private_(b);
    if (!pa || !pb) return !pa && !pb && a == b;
    auto ab = a_to_b_.emplace(a, b).first;
    auto ba = b_to_a_.emplace(b, a).first;
    return ab->second == b && ba->second == a;
  }

  static bool same_attrs(const std::vector<AttrConstraint>& a, const std::vector<AttrConstraint>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].name != b[i].name || a[i].index != b[i].index || !attr_equal(a[i].value, b[i].value)) return false;
    return true;
  }

  const IsPrivate& is_private_;
  std::unordered_map<std::string, std::string> a_to_b_, b_to_a_;
  std::set<std::pair<const PatternNode*, const PatternNode*>> seen_;
};

}  // namespace

// The names edges use, checked: each captured once per match by some root.
std::vector<std::string> GraphPattern::edge_names(const std::vector<RootNames>& names) const {
  Names out;
  for (const GraphEdge& e : edges_) {
    for (const std::string* n : {&e.from, &e.to}) {
      bool owned = false;
      for (const RootNames& r : names) owned = owned || contains(r.single, *n);
      if (!owned)
        throw Error(str("graph pattern: the edge ", edge_text(e), " names '", *n,
                        "', which no root captures once per match"));
      out.push_back(*n);
    }
    if (e.from == e.to) throw Error(str("graph pattern: the edge ", edge_text(e), " joins a pattern to itself"));
    if (e.index < -1) throw Error(str("graph pattern: the edge ", edge_text(e), " has a negative arg index"));
  }
  sort_unique(out);
  return out;
}

// A name is shared when two roots capture it once per match, or an edge
// names it inside a repeated root (other than the root's own name).
void GraphPattern::find_shared(const std::vector<RootNames>& names, const Names& edge_names) {
  for (size_t r = 0; r < roots_.size(); ++r) {
    for (const std::string& n : names[r].single) {
      bool in_other = false;
      for (size_t o = 0; o < roots_.size(); ++o) in_other = in_other || (o != r && contains(names[o].single, n));
      bool edge_in_run = roots_[r].repeated && contains(edge_names, n) && n != roots_[r].pattern->name();
      if (in_other || edge_in_run) shared_.push_back(n);
    }
  }
  sort_unique(shared_);
  for (size_t r = 0; r < roots_.size(); ++r)
    for (const std::string& n : names[r].in_runs)
      if (contains(shared_, n))
        throw Error(str("graph pattern: '", n, "' is shared by roots but inside a run of ", root_text(roots_[r]),
                        ", where it takes one value per element"));
}

// Shared names first (they decide what candidates keep), then the search
// order, then per root (by place) its kept names, key and edges.
void GraphPattern::plan() {
  std::vector<RootNames> made;
  for (const GraphRoot& r : roots_) made.push_back(root_names(r.pattern));
  Names edge_ends = edge_names(made);
  find_shared(made, edge_ends);
  order_ = SearchOrder(roots_, made, edges_).order();
  std::vector<RootNames> names;
  for (uint32_t r : order_) names.push_back(made[r]);
  plans_.resize(roots_.size());
  for (uint32_t r = 0; r < roots_.size(); ++r) plan_kept(r, names, edge_ends);
  for (uint32_t r = 0; r < roots_.size(); ++r) plan_key_and_edges(r, names);
  plan_alike(names, edge_ends);
  auto all = static_cast<uint32_t>(roots_.size());
  for (const GraphEdge& e : edges_) edge_sources_.push_back({sources_before(all, e.from), sources_before(all, e.to)});
}

// The roots placed before `place` that keep the value of `name`, with its slot.
std::vector<GraphPattern::NameSource> GraphPattern::sources_before(uint32_t place, const std::string& name) const {
  std::vector<NameSource> out;
  for (uint32_t r = 0; r < place; ++r) {
    const Names& kept = plans_[r].kept;
    auto it = std::lower_bound(kept.begin(), kept.end(), name);
    if (it != kept.end() && *it == name) out.push_back({r, static_cast<uint32_t>(it - kept.begin())});
  }
  return out;
}

void GraphPattern::plan_kept(uint32_t r, const std::vector<RootNames>& names, const Names& edge_ends) {
  RootPlan& p = plans_[r];
  const GraphRoot& root = searched(r);
  p.ops = root_ops(root.pattern);
  for (const std::string& n : names[r].single)
    if (contains(shared_, n) || contains(edge_ends, n)) p.kept.push_back(n);  // in order: names[r].single is sorted
  auto named = nodes_by_name(root.pattern);
  for (const std::string& n : p.kept) p.kept_nodes.push_back(std::move(named[n]));
  for (uint32_t s = 0; s < p.kept.size(); ++s) {
    const std::string& n = p.kept[s];
    if (contains(shared_, n) && (owner(names, n) < static_cast<int>(r) || root.repeated)) p.key_slots.push_back(s);
  }
}

void GraphPattern::plan_key_and_edges(uint32_t r, const std::vector<RootNames>& names) {
  RootPlan& p = plans_[r];
  for (uint32_t s : p.key_slots) {
    std::vector<NameSource> sources = sources_before(r, p.kept[s]);
    if (sources.empty()) p.key_fixed = false;
    if (searched(r).repeated) sources.push_back({r, s});
    p.key_sources.push_back(std::move(sources));
  }
  const std::string& own = searched(r).pattern->name();
  for (uint32_t e = 0; e < edges_.size(); ++e) {
    // checked once every root capturing an end is assigned
    if (std::max(last_owner(names, edges_[e].from), last_owner(names, edges_[e].to)) != static_cast<int>(r)) continue;
    p.edges.push_back(e);
    int from = owner(names, edges_[e].from), to = owner(names, edges_[e].to);
    if (from == to) continue;
    if (p.users_edge < 0 && to == static_cast<int>(r) && edges_[e].to == own) p.users_edge = static_cast<int>(e);
    if (p.operands_edge < 0 && from == static_cast<int>(r) && edges_[e].from == own)
      p.operands_edge = static_cast<int>(e);
  }
}

// Each plain root's last alike plain root before it, and how many follow
// it (graph.h, step 3a). A name is private to a root when no other root
// captures it and no edge names it. Alike roots with a repeated root, or a
// root with edges, searched between them are not paired.
void GraphPattern::plan_alike(const std::vector<RootNames>& names, const Names& edge_ends) {
  std::unordered_map<std::string, uint32_t> roots_capturing;
  for (const RootNames& r : names) {
    Names all = r.single;
    all.insert(all.end(), r.in_runs.begin(), r.in_runs.end());
    sort_unique(all);
    for (const std::string& n : all) ++roots_capturing[n];
  }
  AlikePatterns::IsPrivate is_private = [&](const std::string& n) {
    return roots_capturing[n] == 1 && !contains(edge_ends, n);
  };
  // Whether the roots searched between places q and r leave the free
  // bindings alone: a repeated root there takes every free binding that
  // fits, and an edge checked there may narrow an earlier one, so what r
  // finds free would depend on which binding q took.
  auto nothing_between = [&](uint32_t q, uint32_t r) {
    for (uint32_t s = q + 1; s < r; ++s)
      if (searched(s).repeated || !plans_[s].edges.empty()) return false;
    return true;
  };
  for (uint32_t r = 0; r < roots_.size(); ++r) {
    if (searched(r).repeated) continue;
    for (uint32_t q = r; q-- > 0;) {
      if (searched(q).repeated || !AlikePatterns(is_private)(*searched(q).pattern, *searched(r).pattern)) continue;
      if (!nothing_between(q, r)) break;
      plans_[r].alike_before = static_cast<int>(q);
      for (int p = static_cast<int>(q); p >= 0; p = plans_[static_cast<size_t>(p)].alike_before)
        ++plans_[static_cast<size_t>(p)].alike_after;
      break;
    }
  }
}

std::string GraphPattern::to_string() const {
  std::ostringstream os;
  os << "roots: [";
  for (size_t i = 0; i < roots_.size(); ++i) os << (i ? ", " : "") << root_text(roots_[i]);
  os << "]";
  if (!edges_.empty()) {
    os << "; edges: [";
    for (size_t i = 0; i < edges_.size(); ++i) os << (i ? ", " : "") << edge_text(edges_[i]);
    os << "]";
  }
  return os.str();
}

}  // namespace aj
