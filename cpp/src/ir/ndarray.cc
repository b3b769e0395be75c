// NDArray: allocation (64-byte aligned, zeroed, size-checked), element
// access, and bool bytes made 0 or 1.
#include "adjoint/ir/ndarray.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "adjoint/ir/dim.h"
#include "adjoint/support/error.h"

namespace aj {

namespace {
// 64-byte aligned storage of at least `bytes` (and at least 64) bytes.
std::shared_ptr<void> aligned_storage(size_t bytes) {
  size_t alloc = ((bytes + 63) / 64) * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

NDArray NDArray::empty(std::vector<int64_t> shape, DType dtype) {
  if (!tensor_bytes(shape, dtype))
    throw SizeOverflowError(str("cannot allocate an array of shape ",
                                shape_to_string(Shape(shape.begin(), shape.end())), " of ",
                                dtype_name(dtype), ": its byte size does not fit in 64 bits"));
  NDArray a;
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.owner_ = aligned_storage(a.nbytes());
  a.data_ = a.owner_.get();
  return a;
}

NDArray::NDArray(std::vector<int64_t> shape, DType dtype) : NDArray(empty(std::move(shape), dtype)) {
  std::memset(data_, 0, nbytes());
}

NDArray::NDArray(std::vector<int64_t> shape, DType dtype, std::shared_ptr<void> owner, void* data)
    : shape_(std::move(shape)), dtype_(dtype), owner_(std::move(owner)), data_(data) {}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

double NDArray::get_as_double(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32: return static_cast<const float*>(data_)[i];
    case DType::kFloat64: return static_cast<const double*>(data_)[i];
    case DType::kInt32: return static_cast<const int32_t*>(data_)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(data_)[i]);
    case DType::kBool: return static_cast<const uint8_t*>(data_)[i] ? 1.0 : 0.0;
  }
  return 0;
}

bool canonical_bools(const void* data, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint8_t seen = 0;  // or-ed, not tested per byte, so the loop vectorizes
  for (int64_t i = 0; i < n; ++i) seen |= p[i];
  return seen <= 1;
}

void make_canonical_bools(void* data, int64_t n) {
  auto* p = static_cast<uint8_t*>(data);
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] != 0;
}

}  // namespace aj
