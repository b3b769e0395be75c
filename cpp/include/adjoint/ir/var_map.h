// VarIndexMap: the definition index of each var of a function. Each var
// caches its index in itself, checked against a flat array of the function's
// vars, so a lookup reads memory near the previous one (a use sits near its
// definition); an open-addressing table answers when the cache was
// overwritten. The printer, structural equality, DCE and Gradient look up
// every var use here, so this is their hot path.
#pragma once

#include <cstdint>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

class VarIndexMap {
 public:
  static constexpr int64_t kAbsent = -1;

  // Params get 0..P-1, binding vars P, P+1, ...; a var defined twice keeps
  // its first index.
  explicit VarIndexMap(const FunctionNode& fn) {
    vars_.reserve(fn.params().size() + fn.bindings().size());
    for (const auto& p : fn.params()) define(p.get());
    for (const auto& b : fn.bindings()) define(b.var.get());
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
      else if (vars_.size() <= UINT32_MAX) v->set_index_hint(static_cast<uint32_t>(vars_.size()));
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
  size_t slot(const VarNode* v) const {  // Fibonacci hashing of the address
    uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
    return static_cast<size_t>((bits * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  std::vector<const VarNode*> vars_;     // by definition index
  bool has_duplicates_ = false;
  mutable std::vector<Slot> slots_;      // built on the first missed hint
  mutable int shift_ = 60;
};

// A growable open-addressing map from vars to small values (pointers, ints):
// what std::unordered_map<const VarNode*, V> does, without a heap node per
// entry. V{} stands for "absent".
template <typename V>
class FlatVarMap {
 public:
  explicit FlatVarMap(size_t expected = 16) { rehash(expected); }

  V get(const VarNode* v) const {
    for (size_t s = slot(v);; s = (s + 1) & mask()) {
      if (slots_[s].var == v) return slots_[s].value;
      if (!slots_[s].var) return V{};
    }
  }

  void set(const VarNode* v, V value) {
    if (2 * (size_ + 1) > slots_.size()) rehash(2 * slots_.size());
    for (size_t s = slot(v);; s = (s + 1) & mask()) {
      if (slots_[s].var == v) {
        slots_[s].value = value;
        return;
      }
      if (!slots_[s].var) {
        slots_[s] = Slot{v, value};
        ++size_;
        return;
      }
    }
  }

 private:
  struct Slot {
    const VarNode* var;
    V value;
  };

  void rehash(size_t want) {
    int bits = 4;
    while ((size_t{1} << bits) < 2 * want) ++bits;
    std::vector<Slot> old = std::move(slots_);
    shift_ = 64 - bits;
    slots_.assign(size_t{1} << bits, Slot{nullptr, V{}});
    size_ = 0;
    for (const auto& s : old)
      if (s.var) set(s.var, s.value);
  }
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(const VarNode* v) const {
    uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
    return static_cast<size_t>((bits * 0x9e3779b97f4a7c15ULL) >> shift_);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  int shift_ = 60;
};

}  // namespace aj
