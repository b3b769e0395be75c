// DeadCodeElimination, and the liveness it rests on: one backward sweep.
//   1. The vars the returned expr uses are wanted.
//   2. Walking the bindings backward, a binding whose var is wanted is live:
//      its var stops being wanted (it is bound here) and the vars its value
//      uses become wanted. Other bindings are dead.
//   3. DCE rebuilds the function from the live bindings, in their order.
// "Wanted" is a set of var addresses that holds only the vars used after the
// current binding and bound before it, so the sweep reads each binding's var
// address and nothing of a dead binding's nodes: a function that is mostly
// dead costs one pass over its binding array.

#include "adjoint/ir/substitute.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

// A set of var addresses: open addressing with linear probing and
// backward-shift deletion, so it stays as small as what it holds.
class VarSet {
 public:
  VarSet() : slots_(16, nullptr) {}

  void insert(const VarNode* v) {
    size_t s = find(v);
    if (slots_[s]) return;
    slots_[s] = v;
    if (2 * ++size_ > slots_.size()) grow();
  }

  // Removes v; false when it was not there.
  bool erase(const VarNode* v) {
    size_t s = find(v);
    if (!slots_[s]) return false;
    slots_[s] = nullptr;
    --size_;
    for (size_t next = (s + 1) & mask(); slots_[next]; next = (next + 1) & mask()) {
      size_t home = slot(slots_[next]);
      // Move the entry back into the hole unless its home lies in (s, next].
      bool stays = s <= next ? (s < home && home <= next) : (s < home || home <= next);
      if (stays) continue;
      slots_[s] = slots_[next];
      slots_[next] = nullptr;
      s = next;
    }
    return true;
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(const VarNode* v) const {
    uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
    return static_cast<size_t>((bits * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  size_t find(const VarNode* v) const {
    size_t s = slot(v);
    while (slots_[s] && slots_[s] != v) s = (s + 1) & mask();
    return s;
  }
  void grow() {
    std::vector<const VarNode*> old(2 * slots_.size(), nullptr);
    old.swap(slots_);
    --shift_;
    size_ = 0;
    for (const VarNode* v : old)
      if (v) insert(v);
  }

  std::vector<const VarNode*> slots_;
  size_t size_ = 0;
  int shift_ = 60;  // 64 - log2(slot count)
};

void want_uses(const Expr& e, VarSet& wanted) {
  switch (e->kind()) {
    case ExprKind::kVar:
      wanted.insert(static_cast<const VarNode*>(e.get()));
      return;
    case ExprKind::kTuple:
      for (const auto& f : static_cast<const TupleNode&>(*e).fields()) want_uses(f, wanted);
      return;
    case ExprKind::kTupleGetItem:
      want_uses(static_cast<const TupleGetItemNode&>(*e).tuple(), wanted);
      return;
    case ExprKind::kCall:
      for (const auto& a : static_cast<const CallNode&>(*e).args()) want_uses(a, wanted);
      return;
    case ExprKind::kConstant:
      return;
  }
}

}  // namespace

std::vector<uint8_t> live_bindings(const FunctionNode& fn) {
  const auto& bindings = fn.bindings();
  std::vector<uint8_t> live(bindings.size(), 0);
  VarSet wanted;
  want_uses(fn.ret(), wanted);
  for (size_t i = bindings.size(); i-- > 0;) {
    if (!wanted.erase(bindings[i].var.get())) continue;
    live[i] = 1;
    want_uses(bindings[i].value, wanted);
  }
  return live;
}

Function dead_code_elimination(const Function& fn) {
  const auto& bindings = fn->bindings();
  std::vector<uint8_t> live = live_bindings(*fn);
  size_t kept_count = 0;
  for (uint8_t l : live) kept_count += l;
  if (kept_count == bindings.size()) return fn;
  std::vector<Binding> kept;
  kept.reserve(kept_count);
  for (size_t i = 0; i < bindings.size(); ++i)
    if (live[i]) kept.push_back(bindings[i]);
  return std::make_shared<FunctionNode>(fn->params(), std::move(kept), fn->ret(), fn->attrs());
}

Module dead_code_elimination(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return dead_code_elimination(fn); });
}

}  // namespace aj
