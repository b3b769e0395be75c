// A pool of reusable buffers for the executor: a buffer freed after its
// value's last use serves the next allocation that fits, so a function's
// peak memory stays near its live set and repeated runs allocate nothing.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "adjoint/ir/ndarray.h"

namespace aj {

class BufferPool {
 public:
  // An array of `shape` and `dtype` backed by a pooled buffer when one fits
  // (capacity >= need and not more than twice it), else by a new one.
  NDArray take(std::vector<int64_t> shape, DType dtype);
  // Returns a's buffer to the pool (a must have been taken from it, and may
  // be a view of part of it: the whole buffer returns).
  void give(NDArray& a);
  // a leaves the pool's care for good (a function result handed to the caller).
  void hand_out(const NDArray& a);
  // A taken buffer of `from` bytes is now seen as an array of `to` bytes
  // (a view of part of it), which is what give() will count back.
  void narrow(size_t from, size_t to) { live_ -= std::min(live_, from - std::min(from, to)); }
  size_t bytes() const;
  void clear();

  // Bytes of taken buffers not yet given back, and their peak since reset_peak().
  size_t live_bytes() const { return live_; }
  size_t peak_bytes() const { return peak_; }
  void reset_peak() { peak_ = live_; }

  // Fresh buffers take() allocated (it found none to reuse) and their bytes, since reset_counts().
  size_t allocations() const { return allocations_; }
  size_t allocated_bytes() const { return allocated_bytes_; }
  void reset_counts() { allocations_ = allocated_bytes_ = 0; }

 private:
  struct Buffer {
    size_t capacity;
    std::shared_ptr<void> owner;
  };
  std::vector<Buffer> free_;
  // The capacity of every buffer taken and not handed out, by its base
  // address: what give() files a buffer under, whatever part a view spans.
  std::unordered_map<const void*, size_t> capacity_;
  size_t live_ = 0;
  size_t peak_ = 0;
  size_t allocations_ = 0;
  size_t allocated_bytes_ = 0;
};

}  // namespace aj
