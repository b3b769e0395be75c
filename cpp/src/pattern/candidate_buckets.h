// The buckets of the graph matcher (graph_match.cc): a root's candidates
// filed by the hash of the values of their key names. Buckets are lists
// threaded through one array and found through one open-addressing table, so
// filing a candidate allocates nothing of its own; each candidate's place in
// its bucket is kept, so how many come after it is known at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aj::graph_candidates {

constexpr uint32_t kNone = UINT32_MAX;

// Candidates filed by the hash of their key: each bucket a list in the
// order candidates were added (binding order), threaded through next_.
class Buckets {
 public:
  void add(size_t hash, uint32_t c) {
    if (4 * (first_.size() + 1) > 3 * slots_.size()) grow();
    uint32_t b = find(hash);
    if (b == kNone) {
      b = static_cast<uint32_t>(first_.size());
      first_.push_back(c);
      last_.push_back(c);
      count_.push_back(0);
      put(hash, b);
    } else {
      next_[last_[b]] = c;
      last_[b] = c;
    }
    if (next_.size() <= c) next_.resize(c + 1, kNone);
    if (place_.size() <= c) place_.resize(c + 1, {kNone, 0});
    place_[c] = {b, count_[b]++};
  }
  // The bucket of `hash`, or kNone.
  uint32_t find(size_t hash) const {
    if (slots_.empty()) return kNone;
    for (size_t s = hash & (slots_.size() - 1);; s = (s + 1) & (slots_.size() - 1)) {
      if (slots_[s].bucket == kNone) return kNone;
      if (slots_[s].hash == hash) return slots_[s].bucket;
    }
  }
  // The bucket's first candidate not yet stepped over (see scan).
  uint32_t& first(uint32_t bucket) { return first_[bucket]; }
  uint32_t next(uint32_t c) const { return next_[c]; }
  // How many candidates are filed after c in its bucket.
  uint32_t after(uint32_t c) const { return count_[place_[c].bucket] - place_[c].index - 1; }

 private:
  struct Slot {
    size_t hash;
    uint32_t bucket;
  };
  void put(size_t hash, uint32_t b) {
    size_t s = hash & (slots_.size() - 1);
    while (slots_[s].bucket != kNone) s = (s + 1) & (slots_.size() - 1);
    slots_[s] = {hash, b};
  }
  void grow() {
    std::vector<Slot> old(std::max<size_t>(16, 2 * slots_.size()), Slot{0, kNone});
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.bucket != kNone) put(s.hash, s.bucket);
  }
  struct Place {
    uint32_t bucket, index;  // index: how many were filed in the bucket before
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> first_, last_, next_;
  std::vector<uint32_t> count_;  // by bucket
  std::vector<Place> place_;     // by candidate
};

}  // namespace aj::graph_candidates
