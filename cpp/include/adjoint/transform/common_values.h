// Bound values by content, for common-subexpression elimination: a call is
// keyed by its op, attrs and arguments (vars by identity, constants by
// value), a tuple by its fields, an item by its tuple and index: each node
// by what it is, then its operands in order (the operand walk of
// analysis/dataflow.h). SeenValues
// files the bindings kept so far under those keys. Shared by
// EliminateCommonSubexpr and by the rewriter, which can share values as it
// binds them (and files the values its rules rewrote, in a ValueIndex).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/function.h"
#include "adjoint/support/hash.h"

namespace aj::cse {

inline bool constants_equal(const ConstantNode& a, const ConstantNode& b) {
  return type_equal(a.type(), b.type()) &&
         std::memcmp(a.data().data(), b.data().data(), a.data().nbytes()) == 0;
}

// What e is apart from its operands: a var's identity, a constant's type
// and bytes, a call's op and attrs, a tuple's arity, a tuple item's index.
inline size_t node_hash(const Expr& e) {
  switch (e->kind()) {
    case ExprKind::kVar:
      return std::hash<const void*>()(e.get());
    case ExprKind::kConstant: {
      const auto& c = static_cast<const ConstantNode&>(*e);
      size_t h = type_hash(c.type());
      const auto* bytes = static_cast<const unsigned char*>(c.data().data());
      for (size_t i = 0; i < c.data().nbytes(); ++i) h = hash_combine(h, bytes[i]);
      return h;
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const CallNode&>(*e);
      size_t h = std::hash<const void*>()(&c.op());
      for (const auto& a : c.attrs()) h = hash_combine(h, attr_hash(a));
      return h;
    }
    case ExprKind::kTuple:
      return hash_combine(0x7u, static_cast<const TupleNode&>(*e).fields().size());
    case ExprKind::kTupleGetItem:
      return static_cast<size_t>(static_cast<const TupleGetItemNode&>(*e).index()) + 1;
  }
  return 0;
}

// Whether a and b agree apart from their operands (see node_hash).
inline bool node_equal(const Expr& a, const Expr& b) {
  if (a->kind() != b->kind()) return false;
  switch (a->kind()) {
    case ExprKind::kVar:
      return a == b;
    case ExprKind::kConstant:
      return constants_equal(static_cast<const ConstantNode&>(*a), static_cast<const ConstantNode&>(*b));
    case ExprKind::kCall: {
      const auto& ca = static_cast<const CallNode&>(*a);
      const auto& cb = static_cast<const CallNode&>(*b);
      if (&ca.op() != &cb.op() || ca.attrs().size() != cb.attrs().size()) return false;
      for (size_t i = 0; i < ca.attrs().size(); ++i)
        if (!attr_equal(ca.attrs()[i], cb.attrs()[i])) return false;
      return true;
    }
    case ExprKind::kTuple:
      return true;
    case ExprKind::kTupleGetItem:
      return static_cast<const TupleGetItemNode&>(*a).index() == static_cast<const TupleGetItemNode&>(*b).index();
  }
  return false;
}

// A value's hash: its node's, mixed with its operands' in order (a var
// operand, the common case, hashed in place).
inline size_t value_hash(const Expr& v) {
  size_t h = node_hash(v);
  for_each_operand(*v, [&h](const Expr& a) {
    h = hash_combine(h, a->kind() == ExprKind::kVar ? std::hash<const void*>()(a.get()) : value_hash(a));
  });
  return h;
}

// Whether two values are the same: equal nodes with equal operands.
inline bool value_equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!node_equal(a, b)) return false;
  Operands xs = operands(*a), ys = operands(*b);
  if (xs.size() != ys.size()) return false;
  for (size_t i = 0; i < xs.size(); ++i)
    if (!value_equal(xs[i], ys[i])) return false;
  return true;
}

// The hash a value is filed under, spread over all 64 bits (mix64): the
// table takes its slot from the low bits and its tag from the high ones.
inline size_t value_key(const Expr& v) { return static_cast<size_t>(mix64(value_hash(v))); }

// Entries (each with a `value`) filed by value, in an open-addressing
// table of 8-byte slots (32 bits of the hash, the index of the entry): one
// flat array, as small as it can be, since every lookup lands in it at
// random.
template <class Entry>
class ValueIndex {
 public:
  ValueIndex(size_t n, const std::vector<Entry>& entries) : entries_(entries) { resize(n); }
  // The entry whose value equals `value`, or nullptr.
  const Entry* find(size_t hash, const Expr& value) const {
    uint32_t tag = static_cast<uint32_t>(hash >> 32);
    for (size_t s = hash & mask();; s = (s + 1) & mask()) {
      const Slot& slot = slots_[s];
      if (!slot.index) return nullptr;
      const Entry& e = entries_[slot.index - 1];
      if (slot.tag == tag && value_equal(e.value, value)) return &e;
    }
  }
  // Records entry i, whose value has `hash`.
  void insert(size_t hash, size_t i) {
    if (4 * ++size_ > 3 * slots_.size()) resize(2 * size_);  // rehashes what it holds
    put(hash, i);
  }

 private:
  struct Slot {
    uint32_t tag;    // high bits of the hash (the low ones pick the slot)
    uint32_t index;  // 1 + index into entries_, 0 when empty
  };
  size_t mask() const { return slots_.size() - 1; }
  void put(size_t hash, size_t i) {
    size_t s = hash & mask();
    while (slots_[s].index) s = (s + 1) & mask();
    slots_[s] = Slot{static_cast<uint32_t>(hash >> 32), static_cast<uint32_t>(i + 1)};
  }
  // Room for n values at a load factor at most 3/4 (small beats fewer probes).
  void resize(size_t n) {
    size_t size = 16;
    while (3 * size < 4 * n + 4) size <<= 1;
    std::vector<Slot> old(size, Slot{0, 0});
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.index) put(value_key(entries_[s.index - 1].value), s.index - 1);
  }
  const std::vector<Entry>& entries_;
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// The bindings kept so far, by value: find gives the var of one bound to an
// equal value, or nullptr.
class SeenValues : public ValueIndex<Binding> {
 public:
  using ValueIndex::ValueIndex;
  Var find(size_t hash, const Expr& value) const {
    const Binding* b = ValueIndex::find(hash, value);
    return b ? b->var : nullptr;
  }
};

}  // namespace aj::cse
