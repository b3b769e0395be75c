// The one 64-bit mixer adjoint's hash tables share: splitmix64's finalizer,
// which spreads every input bit over every output bit. Structural hashing
// runs small ints through it, CSE's table takes slots and tags from its
// output, and the address tables of vars take their slots from it.
#pragma once

#include <cstdint>

namespace aj {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace aj
