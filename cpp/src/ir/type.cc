// DTypes and types: names, sizes, construction, equality, hashing, text.
#include "adjoint/ir/type.h"

#include <functional>

namespace aj {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "float64") return DType::kFloat64;
  if (name == "int32") return DType::kInt32;
  if (name == "int64") return DType::kInt64;
  if (name == "bool") return DType::kBool;
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: return 4;
    case DType::kFloat64: case DType::kInt64: return 8;
    case DType::kBool: return 1;
  }
  return 0;
}

Type TypeNode::tensor(Shape shape, DType dtype) {
  auto t = std::make_shared<TypeNode>();
  t->kind_ = Kind::kTensor;
  t->shape_ = std::move(shape);
  t->dtype_ = dtype;
  return t;
}

Type TypeNode::tuple(std::vector<Type> fields) {
  auto t = std::make_shared<TypeNode>();
  t->kind_ = Kind::kTuple;
  t->fields_ = std::move(fields);
  return t;
}

std::string TypeNode::to_string() const {
  if (is_tensor()) return "Tensor(" + shape_to_string(shape_) + ", \"" + dtype_name(dtype_) + "\")";
  std::string out = "Tuple(";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ", ";
    out += fields_[i]->to_string();
  }
  return out + ")";
}

bool type_equal(const Type& a, const Type& b) {
  if (a == b) return true;
  if (!a || !b || a->kind() != b->kind()) return false;
  if (a->is_tensor()) return a->dtype() == b->dtype() && a->shape() == b->shape();
  const auto& fa = a->fields();
  const auto& fb = b->fields();
  if (fa.size() != fb.size()) return false;
  for (size_t i = 0; i < fa.size(); ++i)
    if (!type_equal(fa[i], fb[i])) return false;
  return true;
}

size_t type_hash(const Type& t) {
  size_t h = t->is_tensor() ? 0x51ed27 : 0x7a3b91;
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  if (t->is_tensor()) {
    mix(static_cast<size_t>(t->dtype()));
    mix(t->shape().size());
    for (const auto& d : t->shape()) mix(d.hash());
  } else {
    mix(t->fields().size());
    for (const auto& f : t->fields()) mix(type_hash(f));
  }
  return h;
}

}  // namespace aj
