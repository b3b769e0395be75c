// The executor's buffer pool (buffer_pool.h): best fit over a short free list.
#include "buffer_pool.h"

#include <algorithm>

namespace aj {

NDArray BufferPool::take(std::vector<int64_t> shape, DType dtype) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  size_t need = static_cast<size_t>(n) * dtype_size(dtype);
  live_ += need;
  peak_ = std::max(peak_, live_);
  size_t best = free_.size();
  for (size_t i = 0; i < free_.size(); ++i) {
    size_t cap = free_[i].capacity;
    if (cap >= need && cap <= 2 * need + 256 && (best == free_.size() || cap < free_[best].capacity))
      best = i;
  }
  if (best == free_.size()) {
    NDArray fresh = NDArray::empty(std::move(shape), dtype);
    capacity_[fresh.owner().get()] = std::max<size_t>(((need + 63) / 64) * 64, 64);
    ++allocations_;
    allocated_bytes_ += need;
    return fresh;
  }
  Buffer buf = std::move(free_[best]);
  free_[best] = std::move(free_.back());
  free_.pop_back();
  void* data = buf.owner.get();
  return NDArray(std::move(shape), dtype, std::move(buf.owner), data);
}

void BufferPool::give(NDArray& a) {
  if (!a.owner()) return;
  live_ -= std::min(live_, a.nbytes());
  auto it = capacity_.find(a.owner().get());
  size_t cap = it != capacity_.end() ? it->second : std::max<size_t>(((a.nbytes() + 63) / 64) * 64, 64);
  free_.push_back({cap, a.owner()});
  a = NDArray();
}

void BufferPool::hand_out(const NDArray& a) {
  live_ -= std::min(live_, a.nbytes());
  capacity_.erase(a.owner().get());
}

void BufferPool::clear() {
  for (const Buffer& b : free_) capacity_.erase(b.owner.get());
  free_.clear();
}

size_t BufferPool::bytes() const {
  size_t total = 0;
  for (const auto& b : free_) total += b.capacity;
  return total;
}

}  // namespace aj
