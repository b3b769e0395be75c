// The one 64-bit mixer adjoint's hash tables share: splitmix64's finalizer,
// which spreads every input bit over every output bit. Structural hashing
// runs small ints through it, CSE's table takes slots and tags from its
// output, and the address tables of vars take their slots from it. Also the
// one way hashes of parts are combined into the hash of a whole (types,
// dims, attrs, CSE's values, the graph matcher's keys).
#pragma once

#include <cstddef>
#include <cstdint>

namespace aj {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// h with v folded in (boost's hash_combine, 64-bit constant).
inline size_t hash_combine(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

}  // namespace aj
