// Types of IR values: a tensor of known rank (shape of dims, dtype) or a
// tuple of types. Types are immutable and shared.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adjoint/ir/dim.h"
#include "adjoint/ir/dtype.h"

namespace aj {

class TypeNode;
using Type = std::shared_ptr<const TypeNode>;

class TypeNode {
 public:
  enum class Kind { kTensor, kTuple };

  // Interned: equal types share a node. Throws SizeOverflowError for a
  // negative dim or a static byte size beyond int64.
  static Type tensor(Shape shape, DType dtype);
  static Type tuple(std::vector<Type> fields);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  const Shape& shape() const { return shape_; }          // tensors
  DType dtype() const { return dtype_; }                 // tensors
  size_t ndim() const { return shape_.size(); }          // tensors
  const std::vector<Type>& fields() const { return fields_; }  // tuples

  // Canonical text: Tensor((3, "n"), "float32") / Tuple(Tensor(...), ...).
  std::string to_string() const;

 private:
  static void init_tensor(TypeNode& t, Shape shape, DType dtype);
  friend class TensorTypeTable;
  Kind kind_ = Kind::kTensor;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  std::vector<Type> fields_;
};

bool type_equal(const Type& a, const Type& b);
size_t type_hash(const Type& t);
// Entries of the intern table of tensor types (live types and freed ones
// not yet erased), for tests of its upkeep.
size_t interned_tensor_types();

}  // namespace aj
