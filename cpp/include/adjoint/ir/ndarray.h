// A dense, row-major, owned tensor value: the payload of IR constants and the
// currency of the executor. The buffer is shared and never mutated once a
// Constant holds it. A bool element is the byte 0 or 1 (see canonical_bools).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "adjoint/ir/dtype.h"

namespace aj {

class NDArray {
 public:
  NDArray() = default;
  // Allocates a zero-filled array. Both allocating constructors throw
  // SizeOverflowError when the byte size does not fit in int64, and
  // std::bad_alloc when the memory cannot be had.
  NDArray(std::vector<int64_t> shape, DType dtype);
  // Allocates an array whose contents are unspecified (for kernel outputs).
  static NDArray empty(std::vector<int64_t> shape, DType dtype);
  // Wraps memory owned by `owner` (no copy).
  NDArray(std::vector<int64_t> shape, DType dtype, std::shared_ptr<void> owner, void* data);

  const std::vector<int64_t>& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  void* data() const { return data_; }
  template <typename T> T* data_as() const { return static_cast<T*>(data_); }
  const std::shared_ptr<void>& owner() const { return owner_; }

  // Element i as a double (for printing and small checks).
  double get_as_double(int64_t i) const;

 private:
  std::vector<int64_t> shape_;
  DType dtype_ = DType::kFloat32;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// Bool elements are the bytes 0 and 1: constants compare and hash by their
// bytes, and the kernels compare, convert and combine bool bytes as they
// are. Memory from outside, where any nonzero byte is True (NumPy's:
// np.frombuffer(b"\x02", np.bool_)), is made so where it enters.
bool canonical_bools(const void* data, int64_t n);  // every byte 0 or 1
void make_canonical_bools(void* data, int64_t n);  // each nonzero byte to 1

}  // namespace aj
