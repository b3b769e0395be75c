// Building blocks of CPU kernels: dispatch on dtype, and a broadcasting loop
// that collapses contiguous dims and hands the kernel long inner runs, so an
// elementwise kernel is one tight loop over pointers with fixed strides.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "adjoint/ir/ndarray.h"
#include "adjoint/runtime/parallel.h"
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

// Elements per chunk below which elementwise work stays on one thread.
constexpr int64_t kParallelGrain = 1 << 18;

// out[i] = f(a[i]) over same-shape contiguous arrays of types A -> O.
template <typename O, typename A, typename F>
void unary_map(const NDArray& a, NDArray& out, F&& f) {
  const A* pa = a.data_as<A>();
  O* po = out.data_as<O>();
  parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) po[i] = f(pa[i]);
  });
}

// out = f(a, b) with NumPy broadcasting; fast paths for equal shapes and a
// scalar operand, strided_loop otherwise. Large outputs are split across the
// kernel threads (by element, or by leading index when broadcasting).
template <typename O, typename A, typename B, typename F>
void binary_map(const NDArray& a, const NDArray& b, NDArray& out, F&& f) {
  const A* pa = a.data_as<A>();
  const B* pb = b.data_as<B>();
  O* po = out.data_as<O>();
  int64_t n = out.numel();
  if (a.numel() == n && b.numel() == n) {
    parallel_for(n, kParallelGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = f(pa[i], pb[i]);
    });
    return;
  }
  if (b.numel() == 1 && a.numel() == n) {
    B c = pb[0];
    parallel_for(n, kParallelGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = f(pa[i], c);
    });
    return;
  }
  if (a.numel() == 1 && b.numel() == n) {
    A c = pa[0];
    parallel_for(n, kParallelGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = f(c, pb[i]);
    });
    return;
  }
  const auto& shape = out.shape();
  std::array<std::vector<int64_t>, 3> strides{contiguous_strides(shape), broadcast_strides(a.shape(), shape),
                                              broadcast_strides(b.shape(), shape)};
  auto run = [&](const std::vector<int64_t>& sub, int64_t first) {
    const std::array<int64_t, 3> base{first * strides[0][0], first * strides[1][0], first * strides[2][0]};
    strided_loop<3>(sub, strides,
                    [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& s) {
                      O* o = po + base[0] + off[0];
                      const A* x = pa + base[1] + off[1];
                      const B* y = pb + base[2] + off[2];
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
  };
  if (shape.empty() || n < 2 * kParallelGrain) {
    run(shape, 0);
    return;
  }
  int64_t row = n / shape[0];
  parallel_for(shape[0], std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row, 1)), [&](int64_t s, int64_t e) {
    std::vector<int64_t> sub = shape;
    sub[0] = e - s;
    run(sub, s);
  });
}

// ---- Reduction building blocks (reduce and nn kernels) ----

// Compiles a function holding a hot loop three times, with AVX-512F, with
// AVX2 and for the baseline the build targets (SSE2), and picks the copy for
// the CPU at load time (GCC's target_clones). The copies agree bit for bit:
// the build turns off FMA contraction (CMakeLists.txt), and reductions fix
// their lanes in the source, not by vector width. The helpers it calls are inlined into it
// (flatten), or they would run their baseline code; an ISA option rather
// than an arch= one, as GCC inlines only across the same arch. Empty where
// that is unavailable.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define AJ_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default"), flatten))
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

// --- Elementwise arithmetic helpers: dtype dispatch without bool, wrapping
// integer arithmetic, NumPy-like element conversion, a vectorizable exp.
#include <cstring>
#include <limits>
#include <utility>

namespace aj {

// Like dispatch_dtype, for every dtype but bool.
template <typename F>
decltype(auto) dispatch_numeric(DType t, F&& f) {
  if (t == DType::kBool) throw Error("expected a numeric dtype, got bool");
  return dispatch_dtype(t, std::forward<F>(f));
}

// Integer arithmetic that wraps on overflow like NumPy's, computed in the
// unsigned type (signed overflow is undefined in C++). Floats pass through.
template <typename T>
using WrapType = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, TypeTag<T>>::type;
template <typename T> T wrap_add(T a, T b) { return T(WrapType<T>(a) + WrapType<T>(b)); }
template <typename T> T wrap_sub(T a, T b) { return T(WrapType<T>(a) - WrapType<T>(b)); }
template <typename T> T wrap_mul(T a, T b) { return T(WrapType<T>(a) * WrapType<T>(b)); }
template <typename T> T wrap_neg(T a) {
  if constexpr (std::is_floating_point_v<T>) return -a;  // -0.0 for 0.0
  else return wrap_sub(T(0), a);
}

// The bits of a float or double as an unsigned integer of the same width, and back.
template <typename T> using FloatBits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
template <typename T> FloatBits<T> bits_of(T x) { FloatBits<T> u; std::memcpy(&u, &x, sizeof u); return u; }
template <typename T> T from_bits(FloatBits<T> u) { T x; std::memcpy(&x, &u, sizeof x); return x; }

// c ? a : b, as a select of bits. Under -ftrapping-math (GCC's default) a
// float ?: whose result feeds more arithmetic becomes a branch, which blocks
// vectorization; this stays a vector blend (for 64-bit types on x86 only
// from SSE4.2 on: SSE2 cannot turn a double compare into a 64-bit mask).
template <typename T>
T blend(bool c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return from_bits<T>(blend(c, bits_of(a), bits_of(b)));
  } else {
    using U = std::make_unsigned_t<T>;
    U m = U(0) - U(c);
    return T((U(a) & m) | (U(b) & U(~m)));
  }
}

// Converts one element like NumPy's astype, without undefined behavior: to
// bool is != 0 (NaN is true); float to int truncates toward zero, saturates
// out of range (+-inf included) and maps NaN to 0; int to narrower int wraps.
template <typename O, typename I>
O convert_value(I x) {
  if constexpr (std::is_same_v<O, uint8_t>) {
    return O(x != I(0));
  } else if constexpr (std::is_floating_point_v<I> && std::is_integral_v<O>) {
    constexpr I lo = I(std::numeric_limits<O>::min());  // -2^(bits-1), exact
    constexpr I hi = -lo;                                // 2^(bits-1), exact
    constexpr I below_hi = hi - hi * std::numeric_limits<I>::epsilon() / 2;  // largest I < hi
    I y = blend(x == x, x, I(0));
    y = blend(y < lo, lo, blend(y > below_hi, below_hi, y));
    return blend(x >= hi, std::numeric_limits<O>::max(), O(y));
  } else {
    return O(x);
  }
}

// exp(x) for float/double in branch-free arithmetic, inlined into the
// caller's loop so that it vectorizes (std::exp is a call per element; for
// double, see blend). Within 1.2 ulp of exp, subnormal results included;
// exp(NaN) = NaN, exp(-inf) = 0, exp(inf) = inf.
//   1. Clamp x to where exp(x) rounds to 0 and to inf in T (NaN passes).
//   2. x = k ln2 + r, k = round(x / ln2), |r| <= ln2 / 2, with ln2 split into
//      a short head (k * head is exact) and a tail.
//   3. exp(r) by its Taylor polynomial (degree 7 for float, 13 for double).
//   4. Multiply by 2^k as 2^(k/2) * 2^(k - k/2), each built in the exponent
//      bits, so that neither factor overflows or is subnormal.
template <typename T>
[[gnu::always_inline]] inline T vec_exp(T x) {
  using U = FloatBits<T>;
  constexpr bool f32 = sizeof(T) == 4;
  constexpr int kMant = std::numeric_limits<T>::digits - 1;
  constexpr U kBias = std::numeric_limits<T>::max_exponent - 1;
  constexpr T kShift = T(U(3) << (kMant - 1));  // adding it rounds to an integer held in the low bits
  constexpr T kLo = f32 ? T(-105) : T(-746), kHi = f32 ? T(89) : T(710);
  constexpr T kLn2Head = f32 ? T(0.693359375) : T(6.93147180369123816490e-01);
  constexpr T kLn2Tail = f32 ? T(-2.12194440054690583e-4) : T(1.90821492927058770002e-10);
  constexpr int kDegree = f32 ? 7 : 13;
  x = blend(x < kLo, kLo, blend(x > kHi, kHi, x));  // NaN passes
  T kf = x * T(1.44269504088896340736) + kShift;
  U k = bits_of(kf) - bits_of(kShift);
  kf -= kShift;
  T r = (x - kf * kLn2Head) - kf * kLn2Tail;
  static constexpr auto kCoeff = [] {  // 1 / n!
    std::array<T, kDegree + 1> c{};
    c[0] = 1;
    for (int n = 1; n <= kDegree; ++n) c[n] = c[n - 1] / T(n);
    return c;
  }();
  T p = kCoeff[kDegree];
  for (int n = kDegree - 1; n >= 0; --n) p = p * r + kCoeff[n];
  U half = bits_of(kf * T(0.5) + kShift) - bits_of(kShift);
  T s1 = from_bits<T>((half + kBias) << kMant), s2 = from_bits<T>((k - half + kBias) << kMant);
  return p * s1 * s2;
}

}  // namespace aj
