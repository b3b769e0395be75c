// The matcher's memo table and the private nodes of a pattern
// (match_memo.h).
#include "match_memo.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace aj::match_detail {

// ---- MemoTable ----

namespace {

size_t memo_hash(const MemoKey& k) {
  uint64_t h = 0;
  for (uint64_t v : {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k.pattern)),
                     static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k.expr)),
                     static_cast<uint64_t>(k.top) << 32 | k.run_top, static_cast<uint64_t>(k.scope) << 32 | k.next_scope,
                     static_cast<uint64_t>(k.scope_begin)}) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 31;
  }
  return static_cast<size_t>(h);
}

}  // namespace

const MemoResult* MemoTable::find(const MemoKey& k) const {
  if (size_ == 0) return nullptr;
  for (size_t s = memo_hash(k) & mask();; s = (s + 1) & mask()) {
    const Slot& slot = slots_[s];
    if (slot.generation != generation_) return nullptr;
    if (slot.key == k) return &slot.result;
  }
}

void MemoTable::insert(const MemoKey& k, const MemoResult& r) {
  if (2 * (size_ + 1) > slots_.size()) grow();
  put(k, r);
  ++size_;
}

void MemoTable::put(const MemoKey& k, const MemoResult& r) {
  size_t s = memo_hash(k) & mask();
  while (slots_[s].generation == generation_) s = (s + 1) & mask();
  slots_[s] = {k, r, generation_};
}

void MemoTable::grow() {
  std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()), Slot{{}, {}, 0});
  old.swap(slots_);
  for (const Slot& s : old)
    if (s.generation == generation_) put(s.key, s.result);
}

// ---- RememberedNodes ----

namespace {

// The distinct nodes of a pattern, each after all its parents (a reverse
// post-order: the root first), and each node's operands and parents by
// position (a parent once per operand that is the node).
struct Dag {
  std::vector<const PatternNode*> nodes;
  std::vector<std::vector<uint32_t>> operands, parents;
};

std::vector<const PatternNode*> post_order(const Pattern& root) {
  std::vector<const PatternNode*> out;
  std::unordered_set<const PatternNode*> seen{root.get()};
  std::vector<std::pair<const PatternNode*, size_t>> todo{{root.get(), 0}};
  while (!todo.empty()) {
    const PatternNode* n = todo.back().first;
    size_t next = todo.back().second++;
    if (next == n->operands().size()) {
      out.push_back(n);
      todo.pop_back();
    } else if (const PatternNode* c = n->operands()[next].get(); seen.insert(c).second) {
      todo.push_back({c, 0});
    }
  }
  return out;
}

Dag dag_of(const Pattern& root) {
  Dag dag;
  dag.nodes = post_order(root);
  std::reverse(dag.nodes.begin(), dag.nodes.end());
  std::unordered_map<const PatternNode*, uint32_t> at;
  for (uint32_t i = 0; i < dag.nodes.size(); ++i) at.emplace(dag.nodes[i], i);
  dag.operands.resize(dag.nodes.size());
  dag.parents.resize(dag.nodes.size());
  for (uint32_t i = 0; i < dag.nodes.size(); ++i) {
    for (const Pattern& o : dag.nodes[i]->operands()) {
      uint32_t c = at.at(o.get());
      dag.operands[i].push_back(c);
      dag.parents[c].push_back(i);
    }
  }
  return dag;
}

// The dominator tree of a DAG whose nodes come after their parents.
class Dominators {
 public:
  explicit Dominators(const Dag& dag) : idom_(dag.nodes.size(), 0), depth_(dag.nodes.size(), 0) {
    for (uint32_t q = 1; q < dag.nodes.size(); ++q) {
      uint32_t d = dag.parents[q][0];
      for (uint32_t p : dag.parents[q]) d = common(d, p);
      idom_[q] = d;
      depth_[q] = depth_[d] + 1;
    }
  }
  // The closest node that dominates both.
  uint32_t common(uint32_t a, uint32_t b) const {
    while (a != b) {
      if (depth_[a] < depth_[b]) std::swap(a, b);
      a = idom_[a];
    }
    return a;
  }

 private:
  std::vector<uint32_t> idom_, depth_;
};

// Whether each node's name, and run's count name, belongs to it alone.
std::vector<bool> own_names(const Dag& dag) {
  std::unordered_map<std::string_view, int> names, counts;
  auto count_name = [](const PatternNode* n) -> std::string_view {
    return n->kind() == PatternKind::kRepeated ? std::string_view(n->text()) : std::string_view();
  };
  for (const PatternNode* n : dag.nodes) {
    if (!n->name().empty()) ++names[n->name()];
    if (!count_name(n).empty()) ++counts[count_name(n)];
  }
  std::vector<bool> own;
  for (const PatternNode* n : dag.nodes)
    own.push_back((n->name().empty() || names[n->name()] == 1) && (count_name(n).empty() || counts[count_name(n)] == 1));
  return own;
}

// Children before parents: the common dominator of a node and all below
// it, and whether every name at or below it is its node's own.
Remembered remembered_nodes(const Pattern& root) {
  Dag dag = dag_of(root);
  Dominators dom(dag);
  std::vector<bool> own = own_names(dag), all_own(dag.nodes.size());
  std::vector<uint32_t> common(dag.nodes.size());
  Remembered out;
  for (auto q = static_cast<uint32_t>(dag.nodes.size()); q-- > 0;) {
    const PatternNode* n = dag.nodes[q];
    common[q] = q;
    bool below_own = true;
    for (uint32_t c : dag.operands[q]) {
      common[q] = dom.common(common[q], common[c]);
      below_own = below_own && all_own[c];
    }
    all_own[q] = own[q] && below_own;
    if (n->operands().empty() || n->kind() == PatternKind::kRepeated) continue;
    bool is_private = common[q] == q && below_own && !n->name().empty();
    if (is_private || dag.parents[q].size() > 1) out.emplace(n, is_private);
  }
  return out;
}

}  // namespace

const Remembered& RememberedNodes::of(const Pattern& root) {
  auto it = found_.find(root.get());
  if (it == found_.end()) it = found_.emplace(root.get(), Found{root, remembered_nodes(root)}).first;
  return it->second.nodes;
}

}  // namespace aj::match_detail
