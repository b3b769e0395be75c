// Types of IR values: a tensor of known rank (shape of dims, dtype) or a
// tuple of types, nested at most kMaxTupleDepth deep. Types are immutable and
// shared; each node keeps its depth and hash, so neither costs a walk.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adjoint/ir/dim.h"
#include "adjoint/ir/dtype.h"

namespace aj {

class TypeNode;
using Type = std::shared_ptr<const TypeNode>;

// The deepest nesting of tuple types: a tensor type has depth 0, a tuple one
// more than its deepest field (Tuple() has 1). The printed annotation of a
// type of depth d, Tuple(...Tuple(Tensor((3,), "float32"))...), nests d + 3
// levels of brackets, and the text parser reads at most 256, so every type
// that can be made prints as text that parses back. The cap also bounds the
// recursion of printing, comparing, hashing and freeing a type.
constexpr int kMaxTupleDepth = 253;

class TypeNode {
 public:
  enum class Kind { kTensor, kTuple };

  // Interned: equal types share a node. Throws SizeOverflowError for a
  // negative dim or a static byte size beyond int64.
  static Type tensor(Shape shape, DType dtype);
  // Throws TypeInferenceError when the tuple would nest deeper than
  // kMaxTupleDepth.
  static Type tuple(std::vector<Type> fields);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  const Shape& shape() const { return shape_; }          // tensors
  DType dtype() const { return dtype_; }                 // tensors
  size_t ndim() const { return shape_.size(); }          // tensors
  const std::vector<Type>& fields() const { return fields_; }  // tuples
  int depth() const { return depth_; }    // 0 for tensors, see kMaxTupleDepth
  size_t hash() const { return hash_; }   // type_hash, computed once

  // Canonical text: Tensor((3, "n"), "float32") / Tuple(Tensor(...), ...).
  std::string to_string() const;

 private:
  static void init_tensor(TypeNode& t, Shape shape, DType dtype);
  friend class TensorTypeTable;
  Kind kind_ = Kind::kTensor;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::vector<Type> fields_;
  int depth_ = 0;
  size_t hash_ = 0;
};

bool type_equal(const Type& a, const Type& b);
inline size_t type_hash(const Type& t) { return t->hash(); }
// Entries of the intern table of tensor types (live types and freed ones
// not yet erased), for tests of its upkeep.
size_t interned_tensor_types();

}  // namespace aj
