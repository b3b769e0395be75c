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

// out[i] = F(a[i], b[i], c[i]), any operand possibly a broadcast element.
template <typename O, typename A, typename B, typename C, typename F>
AJ_MULTIVERSION void ternary_block(const BlockArgs& args) {
  const A* a = static_cast<const A*>(args.in[0]);
  const B* b = static_cast<const B*>(args.in[1]);
  const C* c = static_cast<const C*>(args.in[2]);
  O* o = static_cast<O*>(args.out);
  int64_t n = args.n;
  if (!args.scalar[0] && !args.scalar[1] && !args.scalar[2]) {
    for (int64_t i = 0; i < n; ++i) o[i] = F{}(a[i], b[i], c[i]);
    return;
  }
  int64_t sa = args.scalar[0] ? 0 : 1, sb = args.scalar[1] ? 0 : 1, sc = args.scalar[2] ? 0 : 1;
  for (int64_t i = 0; i < n; ++i) o[i] = F{}(a[i * sa], b[i * sb], c[i * sc]);
}

}  // namespace aj
