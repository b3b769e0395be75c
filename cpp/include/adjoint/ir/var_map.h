// VarIndexMap: the definition index of each var of a function. Each var
// caches its index in itself, checked against a flat array of the function's
// vars, so a lookup touches the var (in cache where it was just used) and one
// slot of that array instead of a random slot of a hash table; an
// open-addressing table answers when a map over another function sharing the
// var overwrote the cache. VarTable keeps a value per var on top of it. The
// printer, structural equality, DCE, CSE, the rewriter and Gradient look up
// every var use here, so this is their hot path.
#pragma once

#include <cstdint>
#include <vector>

#include "adjoint/ir/binding_walk.h"
#include "adjoint/ir/function.h"
#include "adjoint/support/hash.h"

namespace aj {

// The slot of an address in an open-addressing table of 2^(64 - shift)
// slots: the high bits of the address with every bit mixed in (mix64).
// Fibonacci hashing alone (one multiply) sent the vars a parser
// allocates at a fixed stride into long runs of neighbouring slots, which
// linear probing then walked (DCE's liveness set on the compile benchmark's
// wide function: 11 slots read a lookup at 100k bindings, 38 at 400k; with
// the mix, under 2.1 at each size from 10k to 1M).
inline size_t address_slot(const void* address, int shift) {
  return static_cast<size_t>(mix64(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(address))) >> shift);
}

class VarIndexMap {
 public:
  static constexpr int64_t kAbsent = -1;

  // Params get 0..P-1, binding vars P, P+1, ...; a var defined twice keeps
  // its first index.
  explicit VarIndexMap(const FunctionNode& fn) {
    vars_.reserve(fn.params().size() + fn.bindings().size());
    for (const auto& p : fn.params()) define(p.get());
    for_each_binding(fn.bindings(), [this](size_t, const Binding& b) { define(b.var.get()); });
  }
  // Index i for vars[i]: for a pass that indexes part of a function.
  explicit VarIndexMap(const std::vector<const VarNode*>& vars) {
    vars_.reserve(vars.size());
    for (const VarNode* v : vars) define(v);
  }

  size_t size() const { return vars_.size(); }

  // Defines v (which must not be defined yet) at the next index, returned.
  int64_t add(const VarNode* v) {
    int64_t i = static_cast<int64_t>(vars_.size());
    define(v);
    if (!slots_.empty()) {
      if (2 * vars_.size() > slots_.size()) build_table();
      else insert(v, i);
    }
    return i;
  }

  // The var's index, or kAbsent when the function does not define it.
  int64_t operator()(const VarNode* v) const {
    if (!v) return kAbsent;
    uint32_t h = v->index_hint();
    if (!has_duplicates_ && h < vars_.size() && vars_[h] == v) return h;
    return table_lookup(v);
  }

 private:
  // Records v's index in v itself; a later map over a function sharing v may
  // overwrite it, and lookups then fall back to the hash table. A var defined
  // twice (malformed IR) sends every lookup to the table, which keeps first
  // definitions.
  void define(const VarNode* v) {
    if (v) {
      uint32_t h = v->index_hint();
      if (h < vars_.size() && vars_[h] == v) has_duplicates_ = true;
      else if (h != vars_.size() && vars_.size() <= UINT32_MAX)  // no store (no dirty line) when it holds
        v->set_index_hint(static_cast<uint32_t>(vars_.size()));
    }
    vars_.push_back(v);
  }

  int64_t table_lookup(const VarNode* v) const {
    if (slots_.empty()) build_table();
    for (size_t s = slot(v);; s = (s + 1) & mask()) {
      if (slots_[s].var == v) return slots_[s].index;
      if (!slots_[s].var) return kAbsent;
    }
  }

  struct Slot {
    const VarNode* var;
    int64_t index;
  };

  void build_table() const {
    int bits = 4;
    while ((size_t{1} << bits) < 2 * vars_.size()) ++bits;
    shift_ = 64 - bits;
    slots_.assign(size_t{1} << bits, Slot{nullptr, 0});
    for (size_t i = 0; i < vars_.size(); ++i) insert(vars_[i], static_cast<int64_t>(i));
  }

  void insert(const VarNode* v, int64_t index) const {
    if (!v) return;
    for (size_t s = slot(v);; s = (s + 1) & mask()) {
      if (slots_[s].var == v) return;
      if (!slots_[s].var) {
        slots_[s] = Slot{v, index};
        return;
      }
    }
  }

  size_t mask() const { return slots_.size() - 1; }
  size_t slot(const VarNode* v) const { return address_slot(v, shift_); }

  std::vector<const VarNode*> vars_;     // by definition index
  bool has_duplicates_ = false;
  mutable std::vector<Slot> slots_;      // built on the first missed hint
  mutable int shift_ = 60;
};

// A value per var of one function, stored by definition index: what
// std::unordered_map<const VarNode*, V> does, in one flat array with the
// locality of VarIndexMap. Vars a pass binds while it runs are added with
// set(). V{} stands for "absent".
template <typename V>
class VarTable {
 public:
  explicit VarTable(const FunctionNode& fn) : index_(fn), values_(index_.size()) {}

  // The value of v, or nullptr when v has none.
  const V* find(const VarNode* v) const {
    int64_t i = index_(v);
    return i == VarIndexMap::kAbsent ? nullptr : &values_[static_cast<size_t>(i)];
  }
  V get(const VarNode* v) const {
    const V* p = find(v);
    return p ? *p : V{};
  }
  V* find(const VarNode* v) {
    int64_t i = index_(v);
    return i == VarIndexMap::kAbsent ? nullptr : &values_[static_cast<size_t>(i)];
  }
  // Sets the value of a var of the function, or of one added before.
  void set(const VarNode* v, V value) {
    int64_t i = index_(v);
    if (i == VarIndexMap::kAbsent) i = index_.add(v);
    put(i, std::move(value));
  }
  // Adds a var the function does not define (one the pass just made).
  void add(const VarNode* v, V value) { put(index_.add(v), std::move(value)); }
  // Whether any value was ever set.
  bool any() const { return any_; }

 private:
  void put(int64_t i, V value) {
    if (values_.size() < index_.size()) values_.resize(index_.size());
    values_[static_cast<size_t>(i)] = std::move(value);
    any_ = true;
  }

  VarIndexMap index_;
  std::vector<V> values_;
  bool any_ = false;
};

}  // namespace aj
