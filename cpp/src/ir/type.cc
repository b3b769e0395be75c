// DTypes and types: names, sizes, construction (tensor types interned, tuple
// types capped in depth and in size written out), equality, hashing, text.
#include "adjoint/ir/type.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "adjoint/support/error.h"
#include "adjoint/support/hash.h"

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

// As NumPy counts it: the dims other than 0 must multiply (with the item
// size) within int64 even when a 0 leaves no bytes, so (0, 2**61 + 1) and
// (2**61 + 1, 0) of float32 are both too large, as np.empty finds them.
std::optional<int64_t> tensor_bytes(const std::vector<int64_t>& dims, DType t) {
  int64_t bytes = static_cast<int64_t>(dtype_size(t));
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(bytes, d, &bytes)) return std::nullopt;
  }
  return empty ? 0 : bytes;
}

namespace {

// type_hash of a tensor type, computed once: the intern table files the
// type under it, and the node keeps it.
size_t tensor_type_hash(const Shape& shape, DType dtype) {
  size_t h = hash_combine(hash_combine(0x51ed27, static_cast<size_t>(dtype)), shape.size());
  for (const auto& d : shape) h = hash_combine(h, d.hash());
  return h;
}

// A tensor type's constant dims must be non-negative, and its byte size, when
// every dim is constant, must fit in int64 (symbolic dims are checked when
// the executor binds them).
void check_static_shape(const Shape& shape, DType dtype) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  bool all_const = true;
  for (const auto& d : shape) {
    if (!d.is_const()) {
      all_const = false;
      continue;
    }
    if (d.value() < 0)
      throw SizeOverflowError(str("shape ", shape_to_string(shape), " has a negative dim ", d.value()));
    dims.push_back(d.value());
  }
  if (all_const && !tensor_bytes(dims, dtype))
    throw SizeOverflowError(str("shape ", shape_to_string(shape), " of ", dtype_name(dtype),
                                " is too large: its byte size does not fit in 64 bits"));
}

}  // namespace

// Tensor types are interned: equal types share one node while any user holds
// it, so the thousands of bindings of one type cost one allocation and
// comparisons usually stop at the pointer. A lookup erases the entries of
// freed types it passes (so a type made and freed over and over keeps one
// entry, not one per time), and the whole table is purged of them whenever
// it has doubled since the last purge.
class TensorTypeTable {
 public:
  Type get(Shape shape, DType dtype) {
    size_t h = tensor_type_hash(shape, dtype);
    std::lock_guard<std::mutex> lock(mu_);
    auto range = table_.equal_range(h);
    for (auto it = range.first; it != range.second;) {
      Type t = it->second.lock();
      if (!t) {
        it = table_.erase(it);
        continue;
      }
      if (t->dtype() == dtype && t->shape() == shape) return t;
      ++it;
    }
    check_static_shape(shape, dtype);
    auto t = std::make_shared<TypeNode>();
    TypeNode::init_tensor(*t, std::move(shape), dtype, h);
    table_.emplace(h, t);
    if (table_.size() > 2 * purge_at_) purge();
    return t;
  }

 private:
  void purge() {
    for (auto it = table_.begin(); it != table_.end();) it = it->second.expired() ? table_.erase(it) : std::next(it);
    purge_at_ = std::max<size_t>(1024, table_.size());
  }
  friend size_t interned_tensor_types();
  std::mutex mu_;
  std::unordered_multimap<size_t, std::weak_ptr<const TypeNode>> table_;
  size_t purge_at_ = 1024;
};

void TypeNode::init_tensor(TypeNode& t, Shape shape, DType dtype, size_t hash) {
  t.kind_ = Kind::kTensor;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.hash_ = hash;
}

namespace {
TensorTypeTable& tensor_type_table() {
  static TensorTypeTable* table = new TensorTypeTable();
  return *table;
}
}  // namespace

Type TypeNode::tensor(Shape shape, DType dtype) { return tensor_type_table().get(std::move(shape), dtype); }

size_t interned_tensor_types() {
  TensorTypeTable& table = tensor_type_table();
  std::lock_guard<std::mutex> lock(table.mu_);
  return table.table_.size();
}

void check_tuple_type_size(uint64_t size) {
  if (size > kMaxTypeSize)
    throw TypeInferenceError(str("a tuple type would have ", size, " parts written out; tuple types have at most ",
                                 kMaxTypeSize, " parts (every tensor and tuple in it, a shared field counted each ",
                                 "time it appears, as text writes it out)"));
}

Type TypeNode::tuple(std::vector<Type> fields) {
  int deepest = 0;
  uint64_t size = 1;  // saturates, though fields within the cap cannot reach 2**64
  size_t h = hash_combine(0x7a3b91, fields.size());
  for (const auto& f : fields) {
    deepest = std::max(deepest, f->depth());
    if (__builtin_add_overflow(size, f->size(), &size)) size = std::numeric_limits<uint64_t>::max();
    h = hash_combine(h, f->hash());
  }
  if (deepest >= kMaxTupleDepth)
    throw TypeInferenceError(str("a tuple type would nest ", deepest + 1, " levels deep; tuple types nest at most ",
                                 kMaxTupleDepth, " levels (the deepest the text format reads back)"));
  check_tuple_type_size(size);
  auto t = std::make_shared<TypeNode>();
  t->kind_ = Kind::kTuple;
  t->fields_ = std::move(fields);
  t->depth_ = deepest + 1;
  t->size_ = size;
  t->hash_ = h;
  return t;
}

namespace {
// Into one string, so a type's text costs its length, not its length times
// its depth.
void append_type_text(std::string& out, const TypeNode& t) {
  if (t.is_tensor()) {
    out.append("Tensor(").append(shape_to_string(t.shape())).append(", \"").append(dtype_name(t.dtype())).append("\")");
    return;
  }
  out += "Tuple(";
  for (size_t i = 0; i < t.fields().size(); ++i) {
    if (i) out += ", ";
    append_type_text(out, *t.fields()[i]);
  }
  out += ')';
}
}  // namespace

std::string TypeNode::to_string() const {
  std::string out;
  append_type_text(out, *this);
  return out;
}

// Recursion at most kMaxTupleDepth deep, and at most kMaxTypeSize calls; types
// that differ usually differ in hash and are told apart at once.
bool type_equal(const Type& a, const Type& b) {
  if (a == b) return true;
  if (!a || !b || a->hash() != b->hash() || a->kind() != b->kind()) return false;
  if (a->is_tensor()) return a->dtype() == b->dtype() && a->shape() == b->shape();
  const auto& fa = a->fields();
  const auto& fb = b->fields();
  if (fa.size() != fb.size()) return false;
  for (size_t i = 0; i < fa.size(); ++i)
    if (!type_equal(fa[i], fb[i])) return false;
  return true;
}

}  // namespace aj
