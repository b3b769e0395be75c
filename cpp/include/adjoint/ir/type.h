// Types of IR values: a tensor of known rank (shape of dims, dtype) or a
// tuple of types, nested at most kMaxTupleDepth deep and at most kMaxTypeSize
// parts written out. Types are immutable and shared; each node keeps its
// depth, size and hash, so none costs a walk.
#pragma once

#include <cstdint>
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

// The most parts of a type written out: a tensor type is 1 part, a tuple 1
// plus its fields' parts, a field counted every time it appears, as the text
// (and str()) writes it. Fields are shared, so a type of few nodes could
// otherwise stand for 2**254 parts: ((t, t), (t, t)), ... doubles with each
// tuple. The cap bounds the text of one annotation and the walk of comparing
// two types; it is over three times the widest tuple of the benchmarks
// (300k fields), and a type at the cap prints as at most about 26 MB of text
// that parses back in about 3 s (a larger cap would cost the parser gigabytes).
constexpr uint64_t kMaxTypeSize = uint64_t{1} << 20;

class TypeNode {
 public:
  enum class Kind { kTensor, kTuple };

  // Interned: equal types share a node. Throws SizeOverflowError for a
  // negative dim or a static byte size beyond int64.
  static Type tensor(Shape shape, DType dtype);
  // Throws TypeInferenceError when the tuple would nest deeper than
  // kMaxTupleDepth or have more than kMaxTypeSize parts.
  static Type tuple(std::vector<Type> fields);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  const Shape& shape() const { return shape_; }          // tensors
  DType dtype() const { return dtype_; }                 // tensors
  size_t ndim() const { return shape_.size(); }          // tensors
  const std::vector<Type>& fields() const { return fields_; }  // tuples
  int depth() const { return depth_; }    // 0 for tensors, see kMaxTupleDepth
  uint64_t size() const { return size_; } // parts written out, see kMaxTypeSize
  size_t hash() const { return hash_; }   // type_hash, computed once

  // Canonical text: Tensor((3, "n"), "float32") / Tuple(Tensor(...), ...).
  std::string to_string() const;

 private:
  static void init_tensor(TypeNode& t, Shape shape, DType dtype, size_t hash);
  friend class TensorTypeTable;
  Kind kind_ = Kind::kTensor;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::vector<Type> fields_;
  int depth_ = 0;
  uint64_t size_ = 1;
  size_t hash_ = 0;
};

// Throws the TypeInferenceError of TypeNode::tuple when a tuple type of
// `size` parts would pass kMaxTypeSize; for rules that know the size of the
// tuple type they make before making its fields.
void check_tuple_type_size(uint64_t size);

bool type_equal(const Type& a, const Type& b);
inline size_t type_hash(const Type& t) { return t->hash(); }
// Entries of the intern table of tensor types (live types and freed ones
// not yet erased), for tests of its upkeep.
size_t interned_tensor_types();

}  // namespace aj
