// Block functions: what fused elementwise execution (runtime/fusion.cc) runs
// per op. A block function applies one op to one block of a few hundred
// elements held in L1; each operand is a block of n elements or one element
// broadcast over the block. The op families instantiate these templates with
// the functors their kernels use, so a fused result has the unfused bits.
#pragma once

#include <array>
#include <cstdint>

#include "adjoint/op/registry.h"
#include "adjoint/runtime/kernel_util.h"

namespace aj {

struct BlockArgs {
  std::array<const void*, 3> in{};  // the operands, in arg order
  std::array<bool, 3> scalar{};     // in[k] is one element, broadcast over the block
  void* out = nullptr;              // n elements
  int64_t n = 0;
};

// out[i] = F(x[i]) (a unary op's operand always has its result's shape).
template <typename O, typename A, typename F>
AJ_MULTIVERSION void unary_block(const BlockArgs& args) {
  const A* x = static_cast<const A*>(args.in[0]);
  O* y = static_cast<O*>(args.out);
  for (int64_t i = 0; i < args.n; ++i) y[i] = F{}(x[i]);
}

// out[i] = F(a[i], b[i]), either operand possibly a broadcast element.
template <typename O, typename A, typename B, typename F>
AJ_MULTIVERSION void binary_block(const BlockArgs& args) {
  const A* a = static_cast<const A*>(args.in[0]);
  const B* b = static_cast<const B*>(args.in[1]);
  O* o = static_cast<O*>(args.out);
  int64_t n = args.n;
  if (args.scalar[0] && args.scalar[1]) {
    O c = F{}(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = c;
  } else if (args.scalar[1]) {
    B c = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = F{}(a[i], c);
  } else if (args.scalar[0]) {
    A c = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = F{}(c, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = F{}(a[i], b[i]);
  }
}

// One loop of ternary_block per choice of broadcast operands: a broadcast
// element is read at index 0 (known when compiling), so every loop
// vectorizes, where(mask, g, 0.0) as well as where(mask, a, b).
template <bool kScalarA, bool kScalarB, bool kScalarC, typename F, typename O, typename A, typename B, typename C>
inline void ternary_loop(O* o, const A* a, const B* b, const C* c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = F{}(a[kScalarA ? 0 : i], b[kScalarB ? 0 : i], c[kScalarC ? 0 : i]);
}

// out[i] = F(a[i], b[i], c[i]), any operand possibly a broadcast element.
template <typename O, typename A, typename B, typename C, typename F>
AJ_MULTIVERSION void ternary_block(const BlockArgs& args) {
  const A* a = static_cast<const A*>(args.in[0]);
  const B* b = static_cast<const B*>(args.in[1]);
  const C* c = static_cast<const C*>(args.in[2]);
  O* o = static_cast<O*>(args.out);
  int64_t n = args.n;
  switch ((args.scalar[0] ? 4 : 0) | (args.scalar[1] ? 2 : 0) | (args.scalar[2] ? 1 : 0)) {
    case 0: return ternary_loop<false, false, false, F>(o, a, b, c, n);
    case 1: return ternary_loop<false, false, true, F>(o, a, b, c, n);
    case 2: return ternary_loop<false, true, false, F>(o, a, b, c, n);
    case 3: return ternary_loop<false, true, true, F>(o, a, b, c, n);
    case 4: return ternary_loop<true, false, false, F>(o, a, b, c, n);
    case 5: return ternary_loop<true, false, true, F>(o, a, b, c, n);
    case 6: return ternary_loop<true, true, false, F>(o, a, b, c, n);
    default: return ternary_loop<true, true, true, F>(o, a, b, c, n);
  }
}

}  // namespace aj
