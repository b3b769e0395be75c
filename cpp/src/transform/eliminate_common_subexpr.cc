// EliminateCommonSubexpr: identical pure values bound once.
//   1. Walk the bindings in order, replacing uses of eliminated vars.
//   2. Key each call, tuple and tuple item by its op, attrs and arguments
//      (vars by identity, constants by value); a value whose key was seen
//      before maps its var to the earlier var and is dropped.
//   3. Rebuild the function when anything was dropped.
#include <cstdint>
#include <cstring>

#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

bool constants_equal(const ConstantNode& a, const ConstantNode& b) {
  return type_equal(a.type(), b.type()) &&
         std::memcmp(a.data().data(), b.data().data(), a.data().nbytes()) == 0;
}

size_t leaf_hash(const Expr& e) {
  if (auto* c = as<ConstantNode>(e)) {
    size_t h = type_hash(c->type());
    const auto* bytes = static_cast<const unsigned char*>(c->data().data());
    for (size_t i = 0; i < c->data().nbytes(); ++i) h = mix(h, bytes[i]);
    return h;
  }
  if (auto* t = as<TupleNode>(e)) {
    size_t h = 0x7u;
    for (const auto& f : t->fields()) h = mix(h, leaf_hash(f));
    return h;
  }
  return std::hash<const void*>()(e.get());
}

bool leaf_equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind() != b->kind()) return false;
  if (auto* ca = as<ConstantNode>(a)) return constants_equal(*ca, static_cast<const ConstantNode&>(*b));
  if (auto* ta = as<TupleNode>(a)) {
    const auto& tb = static_cast<const TupleNode&>(*b);
    if (ta->fields().size() != tb.fields().size()) return false;
    for (size_t i = 0; i < ta->fields().size(); ++i)
      if (!leaf_equal(ta->fields()[i], tb.fields()[i])) return false;
    return true;
  }
  return false;
}

size_t value_hash(const Expr& v) {
  if (auto* c = as<CallNode>(v)) {
    size_t h = std::hash<const void*>()(&c->op());
    for (const auto& a : c->args()) h = mix(h, leaf_hash(a));
    for (const auto& a : c->attrs()) h = mix(h, attr_hash(a));
    return h;
  }
  if (auto* g = as<TupleGetItemNode>(v)) return mix(leaf_hash(g->tuple()), static_cast<size_t>(g->index()) + 1);
  return leaf_hash(v);
}

bool value_equal(const Expr& a, const Expr& b) {
  if (a->kind() != b->kind()) return false;
  if (auto* ca = as<CallNode>(a)) {
    const auto& cb = static_cast<const CallNode&>(*b);
    if (&ca->op() != &cb.op() || ca->args().size() != cb.args().size()) return false;
    for (size_t i = 0; i < ca->args().size(); ++i)
      if (!leaf_equal(ca->args()[i], cb.args()[i])) return false;
    for (size_t i = 0; i < ca->attrs().size(); ++i)
      if (!attr_equal(ca->attrs()[i], cb.attrs()[i])) return false;
    return true;
  }
  if (auto* ga = as<TupleGetItemNode>(a)) {
    const auto& gb = static_cast<const TupleGetItemNode&>(*b);
    return ga->index() == gb.index() && leaf_equal(ga->tuple(), gb.tuple());
  }
  return leaf_equal(a, b);
}

// Spreads a hash over all 64 bits (splitmix64's finalizer): the table takes
// its slot from the low bits and its tag from the high ones.
size_t spread(size_t h) {
  uint64_t z = static_cast<uint64_t>(h);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<size_t>(z ^ (z >> 31));
}

// Values seen so far, in an open-addressing table of 8-byte slots (32 bits
// of the hash, the index of the kept binding): one flat array, as small as
// it can be, since every lookup lands in it at random.
class SeenValues {
 public:
  SeenValues(size_t n, const std::vector<Binding>& kept) : kept_(kept) {
    size_t size = 16;
    while (3 * size < 4 * n + 4) size <<= 1;  // load factor at most 3/4: small beats fewer probes
    slots_.assign(size, Slot{0, 0});
  }
  // The var bound to a value equal to `value`, or nullptr.
  Var find(size_t hash, const Expr& value) const {
    uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t s = hash & mask();; s = (s + 1) & mask()) {
      const Slot& slot = slots_[s];
      if (!slot.index) return nullptr;
      const Binding& b = kept_[slot.index - 1];
      if (slot.tag == tag && value_equal(b.value, value)) return b.var;
    }
  }
  // Records kept binding i, whose value has `hash`.
  void insert(size_t hash, size_t i) {
    size_t s = hash & mask();
    while (slots_[s].index) s = (s + 1) & mask();
    slots_[s] = Slot{static_cast<uint32_t>(hash >> 32), static_cast<uint32_t>(i + 1)};
  }

 private:
  struct Slot {
    uint32_t tag;    // high bits of the hash (the low ones pick the slot)
    uint32_t index;  // 1 + index into kept_, 0 when empty
  };
  size_t mask() const { return slots_.size() - 1; }
  const std::vector<Binding>& kept_;
  std::vector<Slot> slots_;
};

class Eliminator {
 public:
  explicit Eliminator(const FunctionNode& fn)
      : fn_(fn), seen_(fn.bindings().size(), kept_), replaced_(fn) {}

  Function run() {
    std::vector<Binding>& kept = kept_;
    kept.reserve(fn_.bindings().size());
    for (const auto& b : fn_.bindings()) {
      Expr value = substitute(b.value);
      size_t h = spread(value_hash(value));
      if (Var earlier = seen_.find(h, value)) {
        replaced_.set(b.var.get(), earlier);
        continue;
      }
      seen_.insert(h, kept.size());
      kept.push_back({b.var, value});
    }
    if (!replaced_.any()) return nullptr;
    return std::make_shared<FunctionNode>(fn_.params(), std::move(kept), substitute(fn_.ret()), fn_.attrs());
  }

 private:
  Expr substitute(const Expr& e) const {
    if (!replaced_.any()) return e;
    return aj::substitute(e, [this](const VarNode* v) { return replaced_.find(v); });
  }

  const FunctionNode& fn_;
  std::vector<Binding> kept_;
  SeenValues seen_;
  VarTable<Expr> replaced_;
};

}  // namespace

Function eliminate_common_subexpr(const Function& fn) {
  Function out = Eliminator(*fn).run();
  return out ? out : fn;
}

Module eliminate_common_subexpr(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return eliminate_common_subexpr(fn); });
}

}  // namespace aj
