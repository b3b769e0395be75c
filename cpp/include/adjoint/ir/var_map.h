// VarIndexMap: the definition index of each var of a function, in an
// open-addressing table (one probe into a flat array where std::unordered_map
// would chase a heap node per lookup). The printer and structural equality
// look up every var use here, so this is their hot path.
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
    size_t n = fn.params().size() + fn.bindings().size();
    int bits = 4;
    while ((size_t{1} << bits) < 2 * n) ++bits;
    shift_ = 64 - bits;
    slots_.assign(size_t{1} << bits, Slot{nullptr, 0});
    int64_t i = 0;
    for (const auto& p : fn.params()) insert(p.get(), i++);
    for (const auto& b : fn.bindings()) insert(b.var.get(), i++);
  }

  // The var's index, or kAbsent when the function does not define it.
  int64_t operator()(const VarNode* v) const {
    if (!v) return kAbsent;
    for (size_t s = slot(v);; s = (s + 1) & mask()) {
      if (slots_[s].var == v) return slots_[s].index;
      if (!slots_[s].var) return kAbsent;
    }
  }

 private:
  struct Slot {
    const VarNode* var;
    int64_t index;
  };

  void insert(const VarNode* v, int64_t index) {
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

  std::vector<Slot> slots_;
  int shift_;
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
