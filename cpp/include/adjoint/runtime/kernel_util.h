// Building blocks of CPU kernels: dispatch on dtype, and a broadcasting loop
// that collapses contiguous dims and hands the kernel long inner runs, so an
// elementwise kernel is one tight loop over pointers with fixed strides.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "adjoint/ir/ndarray.h"
#include "adjoint/support/error.h"

namespace aj {

template <typename T> struct TypeTag { using type = T; };

// Calls f(TypeTag<T>{}) with T the C++ type of `t` (bool is uint8_t).
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kBool: return f(TypeTag<uint8_t>{});
  }
  throw Error("unknown dtype");
}

// Like dispatch_dtype, for float32/float64 only.
template <typename F>
decltype(auto) dispatch_float(DType t, F&& f) {
  if (t == DType::kFloat32) return f(TypeTag<float>{});
  if (t == DType::kFloat64) return f(TypeTag<double>{});
  throw Error(str("expected a float dtype, got ", dtype_name(t)));
}

// Row-major strides (in elements) of `in` read as if broadcast to `out`:
// right-aligned, 0 where `in` has a 1 (or no dim) and `out` does not.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Iterates over `shape` with N strided operands (strides in elements; operand
// 0 is usually the output). Adjacent dims that every operand walks
// contiguously are merged; then inner(offsets, n, inner_strides) is called for
// each run of the last dim, with each operand's element offset at the run's
// start and its stride along the run.
template <size_t N, typename Inner>
void strided_loop(const std::vector<int64_t>& shape, std::array<std::vector<int64_t>, N> strides,
                  Inner&& inner) {
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      dims.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
    } else {
      dims.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
    }
  }
  std::array<int64_t, N> off{};
  if (dims.empty()) {
    std::array<int64_t, N> zero{};
    inner(off, int64_t{1}, zero);
    return;
  }
  size_t nd = dims.size();
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = st[k][nd - 1];
  int64_t run = dims[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    inner(off, run, inner_stride);
    size_t d = nd - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
      if (idx[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * dims[d];
      idx[d] = 0;
    }
  }
}

// out[i] = f(a[i]) over same-shape contiguous arrays of types A -> O.
template <typename O, typename A, typename F>
void unary_map(const NDArray& a, NDArray& out, F&& f) {
  const A* pa = a.data_as<A>();
  O* po = out.data_as<O>();
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i]);
}

// out = f(a, b) with NumPy broadcasting; fast paths for equal shapes and a
// scalar operand, strided_loop otherwise.
template <typename O, typename A, typename B, typename F>
void binary_map(const NDArray& a, const NDArray& b, NDArray& out, F&& f) {
  const A* pa = a.data_as<A>();
  const B* pb = b.data_as<B>();
  O* po = out.data_as<O>();
  int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (b.numel() == 1 && a.numel() == n) {
    B s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
    return;
  }
  if (a.numel() == 1 && b.numel() == n) {
    A s = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(s, pb[i]);
    return;
  }
  const auto& shape = out.shape();
  strided_loop<3>(shape, {contiguous_strides(shape), broadcast_strides(a.shape(), shape),
                          broadcast_strides(b.shape(), shape)},
                  [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& s) {
                    O* o = po + off[0];
                    const A* x = pa + off[1];
                    const B* y = pb + off[2];
                    if (s[1] == 1 && s[2] == 0) {
                      B c = *y;
                      for (int64_t i = 0; i < len; ++i) o[i] = f(x[i], c);
                    } else if (s[1] == 0 && s[2] == 1) {
                      A c = *x;
                      for (int64_t i = 0; i < len; ++i) o[i] = f(c, y[i]);
                    } else {
                      for (int64_t i = 0; i < len; ++i) o[i * s[0]] = f(x[i * s[1]], y[i * s[2]]);
                    }
                  });
}

// ---- Reduction building blocks (reduce and nn kernels) ----

// Compiles a function holding a hot loop twice, with AVX2 and for the
// baseline the build targets (SSE2), and picks the copy for the CPU at load
// time (GCC's target_clones). The helpers it calls are inlined into it
// (flatten), or they would run their baseline code; an ISA option rather
// than an arch= one, as GCC inlines only across the same arch. Empty where
// that is unavailable.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define AJ_MULTIVERSION __attribute__((target_clones("avx2", "default"), flatten))
#else
#define AJ_MULTIVERSION
#endif

// NumPy's maximum/minimum: NaN when either operand is NaN.
template <typename T> inline T nan_max(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> inline T nan_min(T a, T b) { return (a <= b || a != a) ? a : b; }

// The sum of f(i) for i in [lo, lo + n), pairwise like NumPy's: blocks of up
// to 128 terms are summed in 8 lanes (which vectorize) and halves are added
// recursively, so rounding error grows as O(log n) rather than O(n).
template <typename F>
auto pairwise_sum(int64_t lo, int64_t n, F&& f) -> std::decay_t<decltype(f(lo))> {
  using A = std::decay_t<decltype(f(lo))>;
  if (n < 8) {
    A s = 0;
    for (int64_t i = lo; i < lo + n; ++i) s += f(i);
    return s;
  }
  if (n <= 128) {
    A r[8];
    for (int k = 0; k < 8; ++k) r[k] = f(lo + k);
    int64_t i = 8;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) r[k] += f(lo + i + k);
    A s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += f(lo + i);
    return s;
  }
  int64_t half = n / 2 - (n / 2) % 8;
  return pairwise_sum(lo, half, f) + pairwise_sum(lo + half, n - half, f);
}

// op folded over x[0, n) from init in 32 interleaved lanes, written as an
// elementwise loop over the lanes so that it vectorizes; op must be
// associative and commutative (max, min, or).
template <typename T, typename Op>
T lane_reduce(const T* x, int64_t n, T init, Op&& op) {
  constexpr int64_t kLanes = 32;
  T r[kLanes];
  for (int64_t k = 0; k < kLanes; ++k) r[k] = init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) r[k] = op(r[k], x[i + k]);
  for (; i < n; ++i) r[0] = op(r[0], x[i]);
  for (int64_t w = kLanes / 2; w > 0; w /= 2)
    for (int64_t k = 0; k < w; ++k) r[k] = op(r[k], r[k + w]);
  return r[0];
}

// Strides over `shape` of the contiguous array of its kept dims (those not
// `reduced`), 0 along reduced dims: how a reduction addresses its output,
// whether or not it keeps dims.
inline std::vector<int64_t> kept_strides(const std::vector<int64_t>& shape,
                                         const std::vector<bool>& reduced) {
  std::vector<int64_t> s(shape.size(), 0);
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (reduced[i]) continue;
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

// Walks a contiguous array of `shape` against the output of reducing its
// `reduced` dims, in runs along the last merged dim: run(o, i, n) when the
// run lies along reduced dims (elements i..i+n of the input all reduce into
// output element o), each(o, i, n) when it lies along kept dims (input
// element i+k reduces into output element o+k). Reducing the last axis gives
// one run per row; reducing leading axes accumulates rows into the output.
template <typename Run, typename Each>
void reduction_runs(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                    Run&& run, Each&& each) {
  strided_loop<2>(shape, {kept_strides(shape, reduced), contiguous_strides(shape)},
                  [&](const std::array<int64_t, 2>& off, int64_t n,
                      const std::array<int64_t, 2>& s) {
                    if (s[0] == 0) run(off[0], off[1], n);
                    else each(off[0], off[1], n);
                  });
}

}  // namespace aj

// --- Data-movement helpers: dispatch on element size, axis and extent
// arithmetic over concrete shapes.
namespace aj {

// Calls f(TypeTag<U>{}) with U an unsigned integer as wide as an element of
// `t`: kernels that only move elements dispatch on size, not dtype.
template <typename F>
decltype(auto) dispatch_elem_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
  }
  throw Error("unsupported element size");
}

// Maps an axis the type rule checked, in [-ndim, ndim), to [0, ndim).
inline size_t wrap_axis(int64_t axis, size_t ndim) {
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(ndim) : axis);
}

// Product of shape[begin:end] (1 when empty).
inline int64_t extent(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

}  // namespace aj
