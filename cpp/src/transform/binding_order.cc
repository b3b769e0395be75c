// Blocks of bindings in place of others, and dependency orders of a list of
// bindings (transform/binding_order.h): the dependences as a CSR table built
// with one walk over the values, a depth-first walk for the stable order,
// and Kahn's algorithm both ways for the bindings on cycles.
#include "adjoint/transform/binding_order.h"

#include <algorithm>
#include <utility>

#include "adjoint/ir/var_map.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

// A table of positions per binding, in CSR form.
struct Table {
  std::vector<uint32_t> start{0};  // size n + 1
  std::vector<uint32_t> items;

  size_t size() const { return start.size() - 1; }
  const uint32_t* begin(size_t i) const { return items.data() + start[i]; }
  const uint32_t* end(size_t i) const { return items.data() + start[i + 1]; }
};

// For each binding, the positions of the bindings whose vars its value
// uses, in the order of the uses (repeats included).
Table dependences_of(const std::vector<Binding>& bindings) {
  std::vector<const VarNode*> vars;
  vars.reserve(bindings.size());
  for (const Binding& b : bindings) vars.push_back(b.var.get());
  VarIndexMap position(vars);
  Table d;
  d.start.reserve(bindings.size() + 1);
  for (const Binding& b : bindings) {
    for_each_var_use(b.value, [&](const VarNode* v) {
      int64_t p = position(v);
      if (p != VarIndexMap::kAbsent) d.items.push_back(static_cast<uint32_t>(p));
    });
    d.start.push_back(static_cast<uint32_t>(d.items.size()));
  }
  return d;
}

// The inverse table: for each binding, the bindings that depend on it.
Table users_of(const Table& d) {
  size_t n = d.size();
  Table u;
  u.start.assign(n + 1, 0);
  for (uint32_t dep : d.items) ++u.start[dep + 1];
  for (size_t i = 0; i < n; ++i) u.start[i + 1] += u.start[i];
  u.items.resize(d.items.size());
  std::vector<uint32_t> fill(u.start.begin(), u.start.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (const uint32_t* p = d.begin(i); p != d.end(i); ++p) u.items[fill[*p]++] = static_cast<uint32_t>(i);
  return u;
}

// Kahn's algorithm along `edges` (edges(i) are the bindings that must come
// before i): 1 for each binding it never reaches.
std::vector<uint8_t> unplaced(const Table& edges, const Table& reverse) {
  size_t n = edges.size();
  std::vector<uint32_t> waiting(n);
  std::vector<uint32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = edges.start[i + 1] - edges.start[i];
    if (waiting[i] == 0) ready.push_back(static_cast<uint32_t>(i));
  }
  std::vector<uint8_t> left(n, 1);
  while (!ready.empty()) {
    uint32_t i = ready.back();
    ready.pop_back();
    left[i] = 0;
    for (const uint32_t* p = reverse.begin(i); p != reverse.end(i); ++p)
      if (--waiting[*p] == 0) ready.push_back(*p);
  }
  return left;
}

// Where the applied blocks go: by position in the function, the block that
// replaces it (-1 for none), and each block's anchor, the last of them.
struct Placement {
  std::vector<int32_t> owner;
  std::vector<int64_t> anchor;

  Placement(size_t n, const std::vector<BindingBlock>& blocks, const std::vector<uint8_t>& applied)
      : owner(n, -1), anchor(blocks.size(), -1) {
    for (size_t g = 0; g < blocks.size(); ++g) {
      if (!applied[g]) continue;
      for (int64_t p : blocks[g].replaced) {
        owner[static_cast<size_t>(p)] = static_cast<int32_t>(g);
        anchor[g] = std::max(anchor[g], p);
      }
    }
  }
};

// The function's bindings with each applied block at its anchor, in place
// of those it replaces; block_of gets each one's block, or -1.
std::vector<Binding> assemble(const std::vector<Binding>& bindings, const std::vector<BindingBlock>& blocks,
                              const Placement& placement, std::vector<int32_t>* block_of) {
  std::vector<Binding> out;
  block_of->clear();
  for (size_t p = 0; p < bindings.size(); ++p) {
    int32_t g = placement.owner[p];
    if (g < 0) {
      out.push_back(bindings[p]);
      block_of->push_back(-1);
    } else if (placement.anchor[static_cast<size_t>(g)] == static_cast<int64_t>(p)) {
      for (const Binding& b : blocks[static_cast<size_t>(g)].bindings) {
        out.push_back(b);
        block_of->push_back(g);
      }
    }
  }
  return out;
}

// Whether every use stays after its binding with the blocks at their
// anchors. Kept bindings keep their order, and a block uses only what the
// bindings it replaces used (bound before its anchor) and its own vars; so
// only the vars of replaced bindings (which a block binds anew at its
// anchor) can move after a use: each use outside their block must come
// after its anchor.
bool anchors_keep_order(const DataflowIndex& index, const Placement& placement) {
  const std::vector<Binding>& bindings = index.function().bindings();
  for (size_t p = 0; p < bindings.size(); ++p) {
    int32_t g = placement.owner[p];
    if (g < 0) continue;
    int64_t anchor = placement.anchor[static_cast<size_t>(g)];
    for (int64_t q : index.users(bindings[p].var.get())) {
      int32_t user_block = placement.owner[static_cast<size_t>(q)];
      if (user_block == g) continue;
      int64_t at = user_block < 0 ? q : placement.anchor[static_cast<size_t>(user_block)];
      if (at < anchor) return false;
    }
  }
  return true;
}

}  // namespace

Function replace_bindings(const DataflowIndex& index, const std::vector<BindingBlock>& blocks,
                          std::vector<uint8_t>* applied_out) {
  const FunctionNode& fn = index.function();
  std::vector<uint8_t> applied(blocks.size(), 1);
  auto function_of = [&fn, &applied, applied_out](std::vector<Binding> bindings) {
    if (applied_out) *applied_out = applied;
    return std::make_shared<FunctionNode>(fn.params(), std::move(bindings), fn.ret(), fn.attrs());
  };
  Placement placement(fn.bindings().size(), blocks, applied);
  std::vector<int32_t> block_of;
  std::vector<Binding> out = assemble(fn.bindings(), blocks, placement, &block_of);
  if (anchors_keep_order(index, placement)) return function_of(std::move(out));
  std::optional<std::vector<uint32_t>> order = stable_dependency_order(out);
  if (!order) {
    std::vector<uint8_t> stuck = bindings_on_cycles(out);
    for (size_t i = 0; i < out.size(); ++i)
      if (stuck[i] && block_of[i] >= 0) applied[static_cast<size_t>(block_of[i])] = 0;
    out = assemble(fn.bindings(), blocks, Placement(fn.bindings().size(), blocks, applied), &block_of);
    order = stable_dependency_order(out);
    if (!order) throw TransformError("replace_bindings: the bindings depend on themselves with no block applied");
  }
  std::vector<Binding> sorted;
  sorted.reserve(out.size());
  for (uint32_t i : *order) sorted.push_back(std::move(out[i]));
  return function_of(std::move(sorted));
}

std::optional<std::vector<uint32_t>> stable_dependency_order(const std::vector<Binding>& bindings) {
  Table d = dependences_of(bindings);
  size_t n = d.size();
  enum : uint8_t { kNew, kOpen, kPlaced };
  std::vector<uint8_t> state(n, kNew);
  std::vector<uint32_t> order;
  order.reserve(n);
  // (binding, whether its dependences are placed): a binding is pushed
  // unexpanded, then expanded (its new dependences pushed above it, last
  // first, so they are placed in the order of the uses), then placed.
  std::vector<std::pair<uint32_t, bool>> stack;
  for (uint32_t root = 0; root < n; ++root) {
    if (state[root] != kNew) continue;
    stack.emplace_back(root, false);
    while (!stack.empty()) {
      auto [i, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        state[i] = kPlaced;
        order.push_back(i);
        continue;
      }
      if (state[i] == kPlaced) continue;  // pushed by two users; placed by the first
      if (state[i] == kOpen) return std::nullopt;  // it waits on itself
      state[i] = kOpen;
      stack.emplace_back(i, true);
      for (const uint32_t* p = d.end(i); p != d.begin(i);)
        if (state[*--p] != kPlaced) stack.emplace_back(*p, false);
    }
  }
  return order;
}

std::vector<uint8_t> bindings_on_cycles(const std::vector<Binding>& bindings) {
  Table deps = dependences_of(bindings);
  Table users = users_of(deps);
  std::vector<uint8_t> from_sources = unplaced(deps, users);
  std::vector<uint8_t> from_sinks = unplaced(users, deps);
  for (size_t i = 0; i < from_sources.size(); ++i) from_sources[i] &= from_sinks[i];
  return from_sources;
}

}  // namespace aj
