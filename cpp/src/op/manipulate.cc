// Shape manipulation and data movement: permute_dims, reshape, broadcast_to,
// collapse_sum_to, expand_dims, squeeze, concat, split, take, index_add (the
// scatter-add inverse of take, for take's gradient), where, cumsum, triu,
// strided_slice (Python slices along listed axes) and strided_slice_backward
// (its gradient: dy written into zeros of x's shape).
// All move data only (zero FLOPs) except the ones that add (collapse_sum_to,
// index_add, cumsum). Each op's type rule is followed by its CPU kernel; the
// VJP rules follow all kernels. Kernels that only move elements dispatch on the
// element size and copy contiguous runs with memcpy; the permute_dims kernel
// merges dims that stay adjacent and transposes tile by tile when the last
// axis moves; collapse_sum_to and cumsum accumulate along rows.
// Each registration ends with the op's reference text (set_doc): its
// docstring and its entry in docs/ops.md.
#include <algorithm>
#include <cstring>
#include <type_traits>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "adjoint/autodiff/vjp.h"
#include "adjoint/runtime/block_kernel.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
#include "adjoint/op/manipulate.h"
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// axes=None reverses all axes; otherwise axes must be a permutation.
Type permute_dims_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  int64_t n = static_cast<int64_t>(x.ndim());
  auto axes = ctx.attr_opt_ints("axes");
  Shape out;
  if (!axes) {
    out.assign(x.shape().rbegin(), x.shape().rend());
  } else {
    if (static_cast<int64_t>(axes->size()) != n)
      ctx.fail("axes ", attr_to_string(*axes), " must list all ", n, " axes of ",
               shape_to_string(x.shape()));
    for (auto a : normalize_axes(ctx, *axes, n)) out.push_back(x.shape()[a]);
  }
  return TypeNode::tensor(std::move(out), x.dtype());
}

// A permutation reduced for copying: the output's dims in order, each with its
// size and its stride in the (contiguous) input, with size-1 dims dropped and
// dims that stay adjacent merged. (2, 3, 4, 5) by [0, 2, 3, 1] -> sizes
// (2, 20, 3), input strides (60, 1, 20).
struct PermutedDims {
  std::vector<int64_t> size, in_stride;
};

PermutedDims reduce_permutation(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  std::vector<int64_t> strides = contiguous_strides(shape);
  PermutedDims p;
  for (int64_t a : perm) {
    if (shape[a] == 1) continue;
    if (!p.size.empty() && p.in_stride.back() == strides[a] * shape[a]) {
      p.size.back() *= shape[a];
      p.in_stride.back() = strides[a];
    } else {
      p.size.push_back(shape[a]);
      p.in_stride.push_back(strides[a]);
    }
  }
  return p;
}

// The last output dim is contiguous in the input too: memcpy each run of it.
void permute_runs(const PermutedDims& p, const char* in, char* out, size_t elem) {
  size_t last = p.size.size() - 1;
  int64_t run = p.size[last];
  std::vector<int64_t> outer(p.size.begin(), p.size.begin() + last);
  std::vector<int64_t> out_strides = contiguous_strides(outer);
  for (auto& s : out_strides) s *= run;
  std::vector<int64_t> in_strides(p.in_stride.begin(), p.in_stride.begin() + last);
  size_t bytes = static_cast<size_t>(run) * elem;
  strided_loop<2>(outer, {out_strides, in_strides},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& s) {
                    for (int64_t r = 0; r < len; ++r)
                      std::memcpy(out + (off[0] + r * s[0]) * elem, in + (off[1] + r * s[1]) * elem, bytes);
                  });
}

// out[r * ld_out + c] = in[c * ld_in + r] for r < rows, c < cols.
template <typename U>
void transpose_plain(const U* in, int64_t ld_in, U* out, int64_t ld_out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * ld_out + c] = in[c * ld_in + r];
}

// transpose_plain of a 4 x 4 block, through registers.
template <typename U>
void transpose_4x4(const U* in, int64_t ld_in, U* out, int64_t ld_out) {
  U t[4][4];
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) t[r][c] = in[c * ld_in + r];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) out[r * ld_out + c] = t[r][c];
}

#ifdef __SSE2__
// 4-byte elements: four row loads, two rounds of unpacks, four row stores.
template <>
void transpose_4x4<uint32_t>(const uint32_t* in, int64_t ld_in, uint32_t* out, int64_t ld_out) {
  auto load = [&](int64_t c) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c * ld_in)); };
  auto store = [&](int64_t r, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * ld_out), v); };
  __m128i a = load(0), b = load(1), c = load(2), d = load(3);
  __m128i ab_lo = _mm_unpacklo_epi32(a, b), ab_hi = _mm_unpackhi_epi32(a, b);
  __m128i cd_lo = _mm_unpacklo_epi32(c, d), cd_hi = _mm_unpackhi_epi32(c, d);
  store(0, _mm_unpacklo_epi64(ab_lo, cd_lo));
  store(1, _mm_unpackhi_epi64(ab_lo, cd_lo));
  store(2, _mm_unpacklo_epi64(ab_hi, cd_hi));
  store(3, _mm_unpackhi_epi64(ab_hi, cd_hi));
}
#endif

// transpose_plain in 32 x 32 tiles, so both sides of a tile stay in L1, each
// tile moved in 4 x 4 blocks. Fewer than 4 columns or rows need no tiles: a
// loop that writes `out` in order (cols < 4) or reads `in` in order
// (rows < 4) streams both sides.
template <typename U>
void transpose_tiled(const U* in, int64_t ld_in, U* out, int64_t ld_out, int64_t rows, int64_t cols) {
  if (cols < 4) return transpose_plain(in, ld_in, out, ld_out, rows, cols);
  if (rows < 4) {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < rows; ++r) out[r * ld_out + c] = in[c * ld_in + r];
    return;
  }
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      int64_t c1 = std::min(cols, c0 + kTile);
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) {
        int64_t c = c0;
        for (; c + 4 <= c1; c += 4) transpose_4x4(in + c * ld_in + r, ld_in, out + r * ld_out + c, ld_out);
        transpose_plain(in + c * ld_in + r, ld_in, out + r * ld_out + c, ld_out, 4, c1 - c);
      }
      transpose_plain(in + c0 * ld_in + r, ld_in, out + r * ld_out + c0, ld_out, r1 - r, c1 - c0);
    }
  }
}

// The last output dim is strided in the input: a tiled 2-D transpose between
// it and the dim the input walks contiguously, for each index of the others.
template <typename U>
void permute_transposed(const PermutedDims& p, const U* in, U* out) {
  size_t last = p.size.size() - 1;
  size_t inner = static_cast<size_t>(std::find(p.in_stride.begin(), p.in_stride.end(), 1) - p.in_stride.begin());
  std::vector<int64_t> out_strides = contiguous_strides(p.size);
  std::vector<int64_t> outer, outer_out, outer_in;
  for (size_t d = 0; d < last; ++d) {
    if (d == inner) continue;
    outer.push_back(p.size[d]);
    outer_out.push_back(out_strides[d]);
    outer_in.push_back(p.in_stride[d]);
  }
  strided_loop<2>(outer, {outer_out, outer_in},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& s) {
                    for (int64_t r = 0; r < len; ++r)
                      transpose_tiled(in + off[1] + r * s[1], p.in_stride[last], out + off[0] + r * s[0],
                                      out_strides[inner], p.size[inner], p.size[last]);
                  });
}

void permute_dims_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  NDArray& out = ctx.out();
  if (out.numel() == 0) return;
  PermutedDims p = reduce_permutation(x.shape(), permute_dims_permutation(*ctx.call));
  if (p.size.size() <= 1) {
    std::memcpy(out.data(), x.data(), out.nbytes());
  } else if (p.in_stride.back() == 1) {
    permute_runs(p, static_cast<const char*>(x.data()), static_cast<char*>(out.data()), dtype_size(x.dtype()));
  } else {
    dispatch_elem_size(x.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      permute_transposed(p, x.data_as<U>(), out.data_as<U>());
    });
  }
}

// The dims of `a` that `b` does not have, taking each dim of b once: the
// dims of ("n - 1", 2, 2) not in ("n - 1", 1) are (2, 2).
Shape dims_not_in(const Shape& a, const Shape& b) {
  Shape left = a;
  for (const Dim& d : b) {
    auto it = std::find(left.begin(), left.end(), d);
    if (it != left.end()) left.erase(it);
  }
  return left;
}

// x (a, b, ...) -> shape, when the element counts are provably equal; one -1
// in shape becomes (elements of x) / (product of the other dims), dividing
// after cancelling the dims both have (exact_divide divides by single terms
// only: ("n - 1", 2, 2) to ("n - 1", -1) divides 4 by 1, not 4*n - 4 by n - 1).
Type reshape_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  Dim total = num_elements(x.shape());
  Shape out = target;
  auto hole = std::find(out.begin(), out.end(), Dim(-1));
  if (hole != out.end()) {
    *hole = Dim(1);
    Dim rest = num_elements(out);
    if (rest == Dim(0))
      ctx.fail("cannot infer the -1 dim of shape ", shape_to_string(target),
               ": its other dims hold no elements");
    auto inferred = exact_divide(num_elements(dims_not_in(x.shape(), out)),
                                 num_elements(dims_not_in(out, x.shape())));
    if (!inferred)
      ctx.fail("cannot infer the -1 dim of shape ", shape_to_string(target), " for x ",
               shape_to_string(x.shape()), ": its ", total.to_string(), " elements are not ",
               total.is_const() && rest.is_const() ? "" : "provably ", "divisible by ",
               rest.to_string());
    *hole = *inferred;
  }
  Dim count = num_elements(out);
  if (count != total)
    ctx.fail("cannot reshape x ", shape_to_string(x.shape()), " (", total.to_string(),
             " elements) to ", shape_to_string(target), " (", count.to_string(), " elements)");
  return TypeNode::tensor(std::move(out), x.dtype());
}

// reshape, expand_dims and squeeze keep the row-major order of the elements:
// the output is a copy of the input's bytes.
void copy_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  NDArray& out = ctx.out();
  if (out.nbytes() != 0) std::memcpy(out.data(), x.data(), out.nbytes());
}

// broadcast_to(x, shape): x's dims, right-aligned, equal the target's or are 1.
Type broadcast_to_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  require_broadcastable(ctx, x.shape(), "x", target, "shape");
  return TypeNode::tensor(target, x.dtype());
}

// Walks the output with x's broadcast strides: each run either copies a row
// of x (memcpy) or repeats one element of it.
void broadcast_to_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  NDArray& out = ctx.out();
  const auto& shape = out.shape();
  dispatch_elem_size(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = x.data_as<U>();
    U* dst = out.data_as<U>();
    // The output is contiguous, so its stride along a run (s[0]) is 1.
    strided_loop<2>(shape, {contiguous_strides(shape), broadcast_strides(x.shape(), shape)},
                    [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& s) {
                      U* o = dst + off[0];
                      const U* i = src + off[1];
                      if (s[1] == 0) std::fill_n(o, len, *i);
                      else if (s[1] == 1) std::memcpy(o, i, static_cast<size_t>(len) * sizeof(U));
                      else for (int64_t k = 0; k < len; ++k) o[k] = i[k * s[1]];
                    });
  });
}

// collapse_sum_to(x, shape) -> shape, where shape broadcasts to x's shape
// (the reverse of broadcast_to: sums over the broadcast dims).
Type collapse_sum_to_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  require_broadcastable(ctx, target, "shape", x.shape(), "x");
  return TypeNode::tensor(target, x.dtype());
}

// The addition of sums: wrapping for integers (NumPy's), logical or for bool
// (NumPy's add on bools), IEEE for floats.
template <typename T>
T sum_add(T a, T b) {
  if constexpr (std::is_same_v<T, uint8_t>) return a | b;
  else if constexpr (std::is_integral_v<T>) return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else return a + b;
}

// Sum of a contiguous run, pairwise over blocks of 8 lanes (NumPy's scheme):
// float rounding error grows with log(n), and the lanes vectorize.
template <typename T>
T pairwise_sum(const T* x, int64_t n) {
  if (n < 8) {
    T s = T(0);
    for (int64_t i = 0; i < n; ++i) s = sum_add(s, x[i]);
    return s;
  }
  if (n <= 128) {
    T lane[8];
    for (int k = 0; k < 8; ++k) lane[k] = x[k];
    int64_t i = 8;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) lane[k] = sum_add(lane[k], x[i + k]);
    T s = sum_add(sum_add(sum_add(lane[0], lane[1]), sum_add(lane[2], lane[3])),
                  sum_add(sum_add(lane[4], lane[5]), sum_add(lane[6], lane[7])));
    for (; i < n; ++i) s = sum_add(s, x[i]);
    return s;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return sum_add(pairwise_sum(x, half), pairwise_sum(x + half, n - half));
}

// x's dims, each summed or kept, with size-1 dims dropped and neighbours that
// are both summed or both kept merged; strides (elements) in x and in the
// output (0 along summed dims). (4, 128, 512) to (128, 1): sizes
// (4, 128, 512), kept (no, yes, no), out strides (0, 1, 0).
struct SumDims {
  std::vector<int64_t> size, x_stride, out_stride;
  std::vector<bool> kept;

  SumDims(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& out_shape) {
    size_t lead = x_shape.size() - out_shape.size();
    for (size_t i = 0; i < x_shape.size(); ++i) {
      if (x_shape[i] == 1) continue;
      bool keep = i >= lead && out_shape[i - lead] != 1;
      if (!kept.empty() && kept.back() == keep) {
        size.back() *= x_shape[i];
      } else {
        size.push_back(x_shape[i]);
        kept.push_back(keep);
      }
    }
    x_stride = contiguous_strides(size);
    out_stride.assign(size.size(), 0);
    int64_t acc = 1;
    for (size_t d = size.size(); d-- > 0;)
      if (kept[d]) {
        out_stride[d] = acc;
        acc *= size[d];
      }
  }

  // Calls f(x_offset, out_offset) at each index of the first n dims.
  template <typename F>
  void for_each_outer(size_t n, F&& f) const {
    std::vector<int64_t> outer(size.begin(), size.begin() + n);
    std::vector<int64_t> xs(x_stride.begin(), x_stride.begin() + n), os(out_stride.begin(), out_stride.begin() + n);
    strided_loop<2>(outer, {xs, os},
                    [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& s) {
                      for (int64_t r = 0; r < len; ++r) f(off[0] + r * s[0], off[1] + r * s[1]);
                    });
  }
};

// out[j] += x[0, j] + ... + x[rows - 1, j] for j < n: eight rows per pass, so
// the output row is loaded and stored once per eight input rows.
template <typename T>
void add_rows(const T* x, int64_t rows, int64_t n, T* out) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8)
    for (int64_t j = 0; j < n; ++j) {
      const T* p = x + r * n + j;
      T s = sum_add(sum_add(sum_add(p[0], p[n]), sum_add(p[2 * n], p[3 * n])),
                    sum_add(sum_add(p[4 * n], p[5 * n]), sum_add(p[6 * n], p[7 * n])));
      out[j] = sum_add(out[j], s);
    }
  for (; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) out[j] = sum_add(out[j], x[r * n + j]);
}

// When the last dim is summed, each run along it adds pairwise into one
// output element; when it is kept, the dim before it is summed and its rows
// add into one output row.
template <typename T>
void collapse_sum(const T* x, T* out, const SumDims& d, int64_t out_numel) {
  std::fill_n(out, out_numel, T(0));
  size_t k = d.size.size();
  if (!d.kept[k - 1]) {
    int64_t len = d.size[k - 1];
    d.for_each_outer(k - 1, [&](int64_t xo, int64_t oo) { out[oo] = sum_add(out[oo], pairwise_sum(x + xo, len)); });
  } else {
    int64_t rows = d.size[k - 2], n = d.size[k - 1];
    d.for_each_outer(k - 2, [&](int64_t xo, int64_t oo) { add_rows(x + xo, rows, n, out + oo); });
  }
}

void collapse_sum_to_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  NDArray& out = ctx.out();
  if (out.numel() == x.numel()) {
    copy_kernel(ctx);
    return;
  }
  if (x.numel() == 0) {
    std::memset(out.data(), 0, out.nbytes());
    return;
  }
  SumDims d(x.shape(), out.shape());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    collapse_sum(x.data_as<T>(), out.data_as<T>(), d, out.numel());
  });
}

// x (a, b), axis=[0, -1] -> (1, a, b, 1): axes index the output.
Type expand_dims_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const auto& axes = ctx.attr_ints("axis");
  int64_t rank = static_cast<int64_t>(x.ndim() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (auto a : normalize_axes(ctx, axes, rank)) inserted[a] = true;
  Shape out;
  auto next = x.shape().begin();
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[i] ? Dim(1) : *next++);
  return TypeNode::tensor(std::move(out), x.dtype());
}

// x (1, a, 1), axis=[0] -> (a, 1); axis=None -> (a): drops every constant 1.
Type squeeze_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  int64_t n = static_cast<int64_t>(x.ndim());
  auto axes = ctx.attr_opt_ints("axis");
  std::vector<bool> dropped(n, false);
  if (!axes)
    for (int64_t i = 0; i < n; ++i) dropped[i] = is_const_one(x.shape()[i]);
  else
    for (auto a : normalize_axes(ctx, *axes, n)) {
      if (!is_const_one(x.shape()[a]))
        ctx.fail("cannot squeeze axis ", a, " of x ", shape_to_string(x.shape()), ": its dim is ",
                 x.shape()[a].to_string(), ", not 1");
      dropped[a] = true;
    }
  Shape out;
  for (int64_t i = 0; i < n; ++i)
    if (!dropped[i]) out.push_back(x.shape()[i]);
  return TypeNode::tensor(std::move(out), x.dtype());
}

// concat(tuple, axis): same rank and dtype; dims equal except along axis.
Type concat_type(const TypeContext& ctx) {
  const Type& t = ctx.arg_type(0);
  if (!t->is_tuple()) ctx.fail("argument 'tensors' must be a tuple, got ", t->to_string());
  if (t->fields().empty()) ctx.fail("needs at least one tensor");
  const Type& first = t->fields()[0];
  if (!first->is_tensor()) ctx.fail("field 0 must be a tensor, got ", first->to_string());
  int64_t n = static_cast<int64_t>(first->ndim());
  if (n == 0) ctx.fail("cannot concatenate rank-0 tensors");
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis"), n);
  Shape out = first->shape();
  for (size_t i = 1; i < t->fields().size(); ++i) {
    const Type& f = t->fields()[i];
    if (!f->is_tensor()) ctx.fail("field ", i, " must be a tensor, got ", f->to_string());
    if (f->dtype() != first->dtype())
      ctx.fail("field ", i, " has dtype ", dtype_name(f->dtype()), ", field 0 has ",
               dtype_name(first->dtype()));
    if (static_cast<int64_t>(f->ndim()) != n)
      ctx.fail("field ", i, " has shape ", shape_to_string(f->shape()), ", field 0 has ",
               shape_to_string(first->shape()), ": ranks differ");
    for (int64_t d = 0; d < n; ++d) {
      if (d == axis) continue;
      if (f->shape()[d] != first->shape()[d])
        ctx.fail("field ", i, " has shape ", shape_to_string(f->shape()), ", field 0 has ",
                 shape_to_string(first->shape()), ": dim ", d, " differs");
    }
    out[axis] = out[axis] + f->shape()[axis];
  }
  return TypeNode::tensor(std::move(out), first->dtype());
}

// Copies `rows` blocks of `bytes`, the r-th from src + r * src_pitch to
// dst + r * dst_pitch: the inner loop of concat and split.
void copy_blocks(char* dst, size_t dst_pitch, const char* src, size_t src_pitch, size_t bytes, int64_t rows) {
  if (bytes == 0) return;
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_pitch, src + r * src_pitch, bytes);
}

// Each input fills a column block of the output seen as (before axis, rest).
void concat_kernel(KernelContext& ctx) {
  NDArray& out = ctx.out();
  const auto& shape = out.shape();
  size_t axis = wrap_axis(ctx.attr_int("axis"), shape.size());
  size_t elem = dtype_size(out.dtype());
  int64_t rows = extent(shape, 0, axis);
  size_t pitch = static_cast<size_t>(extent(shape, axis, shape.size())) * elem;
  char* dst = static_cast<char*>(out.data());
  size_t col = 0;
  for (const NDArray* in : ctx.inputs) {
    size_t bytes = static_cast<size_t>(extent(in->shape(), axis, shape.size())) * elem;
    copy_blocks(dst + col, pitch, static_cast<const char*>(in->data()), bytes, bytes, rows);
    col += bytes;
  }
}

// split(x, sections:int) -> equal parts; split(x, [i, j, ...]) -> parts
// between the indices (NumPy semantics).
Type split_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  int64_t n = static_cast<int64_t>(x.ndim());
  if (n == 0) ctx.fail("cannot split a rank-0 tensor");
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis"), n);
  const Dim& len = x.shape()[axis];
  const AttrValue& spec = ctx.attr("indices_or_sections");
  std::vector<Dim> parts;
  uint64_t count;  // of parts, checked before making them: split(x, 10**9) would take gigabytes
  if (auto* sections = std::get_if<int64_t>(&spec)) count = static_cast<uint64_t>(std::max<int64_t>(*sections, 0));
  else if (auto* ints = std::get_if<std::vector<int64_t>>(&spec)) count = ints->size() + 1;
  else count = std::get<Shape>(spec).size() + 1;
  try {
    check_tuple_type_size(1 + count);
  } catch (const TypeInferenceError& e) {
    ctx.fail(e.what());
  }
  if (auto* sections = std::get_if<int64_t>(&spec)) {
    if (*sections <= 0) ctx.fail("indices_or_sections must be positive, got ", *sections);
    if (*sections == 1) {
      parts.push_back(len);
    } else {
      if (!len.is_const())
        ctx.fail("cannot split symbolic dim ", len.to_string(), " into ", *sections, " equal parts");
      if (len.value() % *sections != 0)
        ctx.fail("dim ", len.value(), " of axis ", axis, " is not divisible into ", *sections,
                 " equal parts");
      parts.assign(static_cast<size_t>(*sections), Dim(len.value() / *sections));
    }
  } else {
    Shape idx;
    if (auto* ints = std::get_if<std::vector<int64_t>>(&spec)) idx.assign(ints->begin(), ints->end());
    else idx = std::get<Shape>(spec);  // split points may be symbolic (n, n + 3)
    Dim prev(0);
    for (const auto& i : idx) {
      Dim part = i - prev;
      if ((part.is_const() && part.value() < 0) || (i.is_const() && i.value() < 0))
        ctx.fail("indices ", attr_to_string(spec), " must be non-negative and non-decreasing");
      if (i.is_const() && len.is_const() && i.value() > len.value())
        ctx.fail("index ", i.to_string(), " is out of range for dim ", len.to_string());
      parts.push_back(part);
      prev = i;
    }
    Dim last = len - prev;
    if (last.is_const() && last.value() < 0)
      ctx.fail("index ", prev.to_string(), " is out of range for dim ", len.to_string());
    parts.push_back(last);
  }
  std::vector<Type> fields;
  for (const auto& p : parts) {
    Shape s = x.shape();
    s[axis] = p;
    fields.push_back(TypeNode::tensor(std::move(s), x.dtype()));
  }
  return TypeNode::tuple(std::move(fields));
}

// Each output takes a column block of the input seen as (before axis, rest).
void split_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  const auto& shape = x.shape();
  size_t axis = wrap_axis(ctx.attr_int("axis"), shape.size());
  size_t elem = dtype_size(x.dtype());
  int64_t rows = extent(shape, 0, axis);
  size_t pitch = static_cast<size_t>(extent(shape, axis, shape.size())) * elem;
  const char* src = static_cast<const char*>(x.data());
  size_t col = 0;
  for (NDArray* out : ctx.outputs) {
    size_t bytes = static_cast<size_t>(extent(out->shape(), axis, shape.size())) * elem;
    copy_blocks(static_cast<char*>(out->data()), bytes, src + col, pitch, bytes, rows);
    col += bytes;
  }
}

// x (a, b, c), indices (i, j) int, axis=1 -> (a, i, j, c)
Type take_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  require_int(ctx, 1);
  const Shape& idx = ctx.tensor(1).shape();
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis"), static_cast<int64_t>(x.ndim()));
  Shape out(x.shape().begin(), x.shape().begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
  return TypeNode::tensor(std::move(out), x.dtype());
}

// x seen as (outer, len, inner) along the axis, the indices as a flat list.
struct TakeDims {
  int64_t outer, len, inner, count;
};

// Fails on the first index outside [-len, len), before anything is read.
template <typename I>
void check_indices(const KernelContext& ctx, const I* idx, const TakeDims& t, size_t axis) {
  for (int64_t j = 0; j < t.count; ++j)
    if (idx[j] < -t.len || idx[j] >= t.len)
      ctx.fail("index ", idx[j], " is out of range for axis ", axis, " (size ", t.len, ") of x ",
               shape_to_string(Shape(ctx.in(0).shape().begin(), ctx.in(0).shape().end())));
}

// out[o, j, :] = x[o, idx[j], :], negative indices counting from the end.
template <typename U, typename I>
void gather(const U* x, const I* idx, U* out, const TakeDims& t) {
  auto at = [&](int64_t j) { return idx[j] < 0 ? idx[j] + t.len : static_cast<int64_t>(idx[j]); };
  for (int64_t o = 0; o < t.outer; ++o) {
    const U* src = x + o * t.len * t.inner;
    U* dst = out + o * t.count * t.inner;
    if (t.inner == 1) {
      for (int64_t j = 0; j < t.count; ++j) dst[j] = src[at(j)];
    } else {
      for (int64_t j = 0; j < t.count; ++j)
        std::memcpy(dst + j * t.inner, src + at(j) * t.inner, static_cast<size_t>(t.inner) * sizeof(U));
    }
  }
}

// Shared by take and index_add: x (input 0) seen along the axis as
// (outer, len, inner), the indices (input 1) checked, then
// body(dims, indices) with the indices typed int32_t or int64_t.
template <typename Body>
void with_take_indices(const KernelContext& ctx, Body&& body) {
  const auto& shape = ctx.in(0).shape();
  size_t axis = wrap_axis(ctx.attr_int("axis"), shape.size());
  TakeDims t{extent(shape, 0, axis), shape[axis], extent(shape, axis + 1, shape.size()), ctx.in(1).numel()};
  auto run = [&](auto* idx) {
    check_indices(ctx, idx, t, axis);
    body(t, idx);
  };
  if (ctx.in(1).dtype() == DType::kInt32) run(ctx.in(1).data_as<int32_t>());
  else run(ctx.in(1).data_as<int64_t>());
}

void take_kernel(KernelContext& ctx) {
  with_take_indices(ctx, [&](const TakeDims& t, const auto* idx) {
    if (ctx.out().numel() == 0) return;
    dispatch_elem_size(ctx.in(0).dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      gather(ctx.in(0).data_as<U>(), idx, ctx.out().data_as<U>(), t);
    });
  });
}

// condition bool, x1, x2 of one dtype -> broadcast of all three, x1's dtype
Type where_type(const TypeContext& ctx) {
  require_bool(ctx, 0);
  require_same_dtype(ctx, 1, 2);
  Shape s = broadcast_shapes(ctx, ctx.tensor(0).shape(), ctx.tensor(1).shape());
  return TypeNode::tensor(broadcast_shapes(ctx, s, ctx.tensor(2).shape()), ctx.tensor(1).dtype());
}

// c ? a : b without a branch (a random mask would defeat the predictor):
// U is an unsigned integer as wide as the element, so this moves bits.
template <typename U>
U select(uint8_t c, U a, U b) {
  U mask = U(0) - U(c != 0);
  return (a & mask) | (b & ~mask);
}

// o[i] = c[i] ? a[i] : b[i] along one run, with fast paths for contiguous
// operands and a broadcast scalar branch. The output is contiguous (s[0] = 1).
template <typename U>
void select_run(U* o, const uint8_t* c, const U* a, const U* b, int64_t n, const std::array<int64_t, 4>& s) {
  if (s[1] == 1 && s[2] == 1 && s[3] == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = select(c[i], a[i], b[i]);
  } else if (s[1] == 1 && s[2] == 1 && s[3] == 0) {
    U y = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = select(c[i], a[i], y);
  } else if (s[1] == 1 && s[2] == 0 && s[3] == 1) {
    U y = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = select(c[i], y, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = select(c[i * s[1]], a[i * s[2]], b[i * s[3]]);
  }
}

void where_kernel(KernelContext& ctx) {
  NDArray& out = ctx.out();
  const auto& shape = out.shape();
  const NDArray &cond = ctx.in(0), &x1 = ctx.in(1), &x2 = ctx.in(2);
  dispatch_elem_size(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const uint8_t* c = cond.data_as<uint8_t>();
    const U* a = x1.data_as<U>();
    const U* b = x2.data_as<U>();
    U* o = out.data_as<U>();
    strided_loop<4>(shape,
                    {contiguous_strides(shape), broadcast_strides(cond.shape(), shape),
                     broadcast_strides(x1.shape(), shape), broadcast_strides(x2.shape(), shape)},
                    [&](const std::array<int64_t, 4>& off, int64_t len, const std::array<int64_t, 4>& s) {
                      select_run(o + off[0], c + off[1], a + off[2], b + off[3], len, s);
                    });
  });
}

// where's block function for fusion (runtime/block_kernel.h): select on bits.
template <typename U>
struct SelectBits {
  U operator()(uint8_t c, U a, U b) const { return select(c, a, b); }
};

BlockFn where_block(const CallNode& call) {
  return dispatch_elem_size(call.type()->dtype(), [](auto tag) -> BlockFn {
    using U = typename decltype(tag)::type;
    return ternary_block<U, uint8_t, U, U, SelectBits<U>>;
  });
}

// x (...) numeric, axis in range -> same type
Type cumsum_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  normalize_axis(ctx, ctx.attr_int("axis"), static_cast<int64_t>(ctx.tensor(0).ndim()));
  return ctx.arg_type(0);
}

// Running sums along the middle dim of x seen as (outer, n, inner), in T
// (integers wrap): sequential along a row when inner is 1, row-wise adds of
// the previous output row otherwise.
template <typename T>
void cumsum(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* src = x + o * n * inner;
    T* dst = out + o * n * inner;
    if (inner == 1) {
      T acc = src[0];
      dst[0] = acc;
      for (int64_t k = 1; k < n; ++k) dst[k] = acc = sum_add(acc, src[k]);
      continue;
    }
    std::copy_n(src, inner, dst);
    for (int64_t k = 1; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j)
        dst[k * inner + j] = sum_add(dst[(k - 1) * inner + j], src[k * inner + j]);
  }
}

void cumsum_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  if (x.numel() == 0) return;
  const auto& shape = x.shape();
  size_t axis = wrap_axis(ctx.attr_int("axis"), shape.size());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumsum(x.data_as<T>(), ctx.out().data_as<T>(), extent(shape, 0, axis), shape[axis],
           extent(shape, axis + 1, shape.size()));
  });
}

// x (..., m, n), rank >= 2 -> same type
Type triu_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  if (x.ndim() < 2)
    ctx.fail("argument 'x' must have rank >= 2, got shape ", shape_to_string(x.shape()));
  return ctx.arg_type(0);
}

// Row i of each (m, n) matrix keeps columns j >= i + k: a memset of the
// columns before, a memcpy of the rest (a zero of every dtype is all zero bytes).
void triu_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  if (x.numel() == 0) return;
  const auto& shape = x.shape();
  size_t nd = shape.size();
  int64_t m = shape[nd - 2], n = shape[nd - 1];
  int64_t k = std::clamp<int64_t>(ctx.attr_int("k"), -m, n);
  size_t elem = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(ctx.out().data());
  int64_t rows = extent(shape, 0, nd - 2) * m;
  for (int64_t r = 0; r < rows; ++r) {
    size_t zeros = static_cast<size_t>(std::clamp<int64_t>(r % m + k, 0, n)) * elem;
    size_t row = static_cast<size_t>(r * n) * elem;
    size_t bytes = static_cast<size_t>(n) * elem;
    std::memset(dst + row, 0, zeros);
    std::memcpy(dst + row + zeros, src + row + zeros, bytes - zeros);
  }
}


// ---- strided_slice: Python slices along listed axes, and its scatter-back ----

// The slice attrs (axes, begin, end, strides) of a strided_slice or
// strided_slice_backward call, read through any AttrReader.
struct SliceAttrs {
  std::vector<int64_t> axes, begin, end, strides;  // strides filled with 1 when None
};

template <class Reader>
SliceAttrs read_slice_attrs(const Reader& r) {
  SliceAttrs a{r.attr_ints("axes"), r.attr_ints("begin"), r.attr_ints("end"), {}};
  a.strides = r.attr_opt_ints("strides").value_or(std::vector<int64_t>(a.axes.size(), 1));
  return a;
}

struct CallAttrs : AttrReader<CallAttrs> {
  explicit CallAttrs(const CallNode& c) : call(c) {}
  const CallNode& call;
  const OpDef& op_def() const { return call.op(); }
  const Attrs& attr_values() const { return call.attrs(); }
};

// Python's slice(begin, end, step).indices(dim): the first index and the
// number of indices, for any int64 begin/end (step != 0) without overflow.
struct AxisSlice {
  int64_t start, step, len;
};

AxisSlice slice_axis(int64_t dim, int64_t begin, int64_t end, int64_t step) {
  auto adjust = [&](int64_t v) {
    if (v < 0) {
      v += dim;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= dim) {
      v = step < 0 ? dim - 1 : dim;
    }
    return v;
  };
  int64_t start = adjust(begin), stop = adjust(end);
  uint64_t magnitude = step < 0 ? uint64_t(-(step + 1)) + 1 : uint64_t(step);
  int64_t span = step < 0 ? start - stop : stop - start;  // within [-dim - 1, dim + 1]
  int64_t len = span > 0 ? static_cast<int64_t>((uint64_t(span) - 1) / magnitude + 1) : 0;
  return {start, step, len};
}

// Per dim of x (of `shape`): the slice it takes; unlisted dims are whole.
std::vector<AxisSlice> slice_dims(const SliceAttrs& a, const std::vector<int64_t>& shape) {
  std::vector<AxisSlice> out;
  for (int64_t d : shape) out.push_back({0, 1, d});
  for (size_t i = 0; i < a.axes.size(); ++i) {
    size_t ax = wrap_axis(a.axes[i], shape.size());
    out[ax] = slice_axis(shape[ax], a.begin[i], a.end[i], a.strides[i]);
  }
  return out;
}

constexpr int64_t kSliceToEnd = INT64_MAX;         // a begin or end past the far end
constexpr int64_t kSliceBeforeStart = -INT64_MAX;  // an end (step < 0) at or below this: before index 0

// A slice bound of an axis of symbolic size n, as a polynomial in n, assuming
// it is in range: b >= 0 is b, b < 0 is n + b; past the end is n (step > 0)
// or n - 1 (step < 0); before the start is 0 (step > 0) or -1 (step < 0).
Dim symbolic_bound(const Dim& n, int64_t b, int64_t step) {
  if (b == kSliceToEnd) return step > 0 ? n : n - Dim(1);
  if (b <= kSliceBeforeStart) return Dim(step > 0 ? 0 : -1);
  return b >= 0 ? Dim(b) : n + Dim(b);
}

// The length of a slice of a symbolic dim n, assuming its bounds are in
// range (which the kernel checks at run time): stop - start for steps of +-1
// when it grows with n (n - 2 for [1:-1]), and for any step when it is a
// constant (x[-6:-1:2] has 3 elements). nullopt otherwise (x[::2] of n, or
// x[1::-1], whose 2 - n elements only n <= 2 could have).
std::optional<Dim> symbolic_slice_len(const Dim& n, int64_t begin, int64_t end, int64_t step) {
  Dim start = symbolic_bound(n, begin, step), stop = symbolic_bound(n, end, step);
  Dim diff = step > 0 ? stop - start : start - stop;
  if (diff.is_const()) {
    if (diff.value() <= 0) return Dim(0);
    uint64_t magnitude = step < 0 ? uint64_t(-(step + 1)) + 1 : uint64_t(step);
    return Dim(static_cast<int64_t>((uint64_t(diff.value()) - 1) / magnitude + 1));
  }
  bool grows_with_n = true;  // n - 2, not 2 - n (which no large n can have)
  for (const DimTerm& t : diff.terms()) grows_with_n = grows_with_n && (t.monomial.empty() || t.coeff > 0);
  if ((step == 1 || step == -1) && grows_with_n) return diff;
  return std::nullopt;
}

// The checked slice attrs against an x of rank `ndim`; axes normalized.
SliceAttrs checked_slice_attrs(const TypeContext& ctx, size_t ndim) {
  SliceAttrs a = read_slice_attrs(ctx);
  auto same_length = [&](const char* name, size_t n) {
    if (n != a.axes.size())
      ctx.fail("attr '", name, "' has ", n, " entries but 'axes' has ", a.axes.size(), " (one per sliced axis)");
  };
  same_length("begin", a.begin.size());
  same_length("end", a.end.size());
  same_length("strides", a.strides.size());
  a.axes = normalize_axes(ctx, a.axes, static_cast<int64_t>(ndim));
  for (size_t i = 0; i < a.axes.size(); ++i)
    if (a.strides[i] == 0) ctx.fail("strides[", i, "] (axis ", a.axes[i], ") is 0; a slice step must be nonzero");
  return a;
}

// `shape` sliced by the attrs: each listed dim becomes its slice's length.
Shape sliced_shape(const TypeContext& ctx, const Shape& shape, const SliceAttrs& a) {
  Shape out = shape;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const Dim& d = shape[static_cast<size_t>(a.axes[i])];
    if (d.is_const()) {
      out[a.axes[i]] = Dim(slice_axis(d.value(), a.begin[i], a.end[i], a.strides[i]).len);
      continue;
    }
    auto len = symbolic_slice_len(d, a.begin[i], a.end[i], a.strides[i]);
    if (!len)
      ctx.fail("axis ", a.axes[i], " of size ", d.to_string(), ": the length of slice (begin ", a.begin[i],
               ", end ", a.end[i], ", stride ", a.strides[i],
               ") of a symbolic dim is not a polynomial (a stride other than 1 or -1 needs a constant "
               "distance between begin and end)");
    out[a.axes[i]] = *len;
  }
  return out;
}

// x (a, b, ...), axes, begin, end (one each per sliced axis), strides=None
// (all 1) -> x with each listed axis sliced as x[begin:end:stride].
Type strided_slice_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  SliceAttrs a = checked_slice_attrs(ctx, x.ndim());
  return TypeNode::tensor(sliced_shape(ctx, x.shape(), a), x.dtype());
}

// dy, shape: dy must be strided_slice of shape by the attrs -> shape, dy's dtype.
Type strided_slice_backward_type(const TypeContext& ctx) {
  const TypeNode& dy = ctx.tensor(0);
  const Shape& shape = ctx.attr_shape("shape");
  SliceAttrs a = checked_slice_attrs(ctx, shape.size());
  Shape want = sliced_shape(ctx, shape, a);
  if (dy.shape() != want)
    ctx.fail("dy has shape ", shape_to_string(dy.shape()), ", but the slice of shape ", shape_to_string(shape),
             " has shape ", shape_to_string(want));
  return TypeNode::tensor(shape, dy.dtype());
}

// The sliced elements of a contiguous array of `shape`: their element offset
// (the slice's first element) and strides, over the sliced shape.
struct SlicedLayout {
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
};

SlicedLayout sliced_layout(const SliceAttrs& a, const std::vector<int64_t>& shape) {
  std::vector<int64_t> in_strides = contiguous_strides(shape);
  std::vector<AxisSlice> slices = slice_dims(a, shape);
  SlicedLayout out;
  for (size_t d = 0; d < shape.size(); ++d) {
    const AxisSlice& s = slices[d];
    out.shape.push_back(s.len);
    // One index or none: the step is never taken (and may be huge).
    out.strides.push_back(s.len > 1 ? s.step * in_strides[d] : in_strides[d]);
    if (s.len > 0) out.offset += s.start * in_strides[d];
  }
  return out;
}

// Copies between a contiguous array (dense, of the sliced shape) and the
// sliced elements of another (`sliced` at `l`'s offset and strides): gather
// reads the slice into dense, scatter writes dense into the slice.
template <typename U, bool kGather>
void copy_slice(U* dense, U* sliced, const SlicedLayout& l) {
  strided_loop<2>(l.shape, {contiguous_strides(l.shape), l.strides},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& s) {
                    U* d = dense + off[0];
                    U* x = sliced + l.offset + off[1];
                    if (s[1] == 1) {
                      if constexpr (kGather) std::memcpy(d, x, static_cast<size_t>(len) * sizeof(U));
                      else std::memcpy(x, d, static_cast<size_t>(len) * sizeof(U));
                    } else {
                      for (int64_t k = 0; k < len; ++k) {
                        if constexpr (kGather) d[k] = x[k * s[1]];
                        else x[k * s[1]] = d[k];
                      }
                    }
                  });
}

// The slice of a symbolic axis is typed assuming its bounds are in range;
// fails when this run's sizes make the slice another length.
void require_planned_slice(const KernelContext& ctx, const SlicedLayout& l, const std::vector<int64_t>& full,
                           const std::vector<int64_t>& sliced) {
  if (l.shape != sliced)
    ctx.fail("the slice of x ", shape_to_string(Shape(full.begin(), full.end())), " has shape ",
             shape_to_string(Shape(l.shape.begin(), l.shape.end())), " in this run, but its type has ",
             shape_to_string(Shape(sliced.begin(), sliced.end())),
             ": a slice bound is out of range for a symbolic dim");
}

void strided_slice_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  NDArray& out = ctx.out();
  SlicedLayout l = sliced_layout(read_slice_attrs(ctx), x.shape());
  require_planned_slice(ctx, l, x.shape(), out.shape());
  if (out.numel() == 0) return;
  dispatch_elem_size(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    copy_slice<U, true>(out.data_as<U>(), x.data_as<U>(), l);
  });
}

// Zeros of the full shape, dy written into the slice.
void strided_slice_backward_kernel(KernelContext& ctx) {
  NDArray& out = ctx.out();
  if (out.nbytes()) std::memset(out.data(), 0, out.nbytes());
  SlicedLayout l = sliced_layout(read_slice_attrs(ctx), out.shape());
  require_planned_slice(ctx, l, out.shape(), ctx.in(0).shape());
  if (ctx.in(0).numel() == 0) return;
  dispatch_elem_size(out.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    copy_slice<U, false>(ctx.in(0).data_as<U>(), out.data_as<U>(), l);
  });
}

// The slice is one contiguous block of x, in order, when every dim longer
// than 1 steps through x by the stride a dense array of the sliced shape
// has: then the output is x's bytes from the slice's first element. A slice
// that is not the planned shape is left to the kernel, which fails.
std::optional<int64_t> strided_slice_view_offset(const CallNode& call, const std::vector<int64_t>& in_shape,
                                                 const std::vector<int64_t>& out_shape) {
  SlicedLayout l = sliced_layout(read_slice_attrs(CallAttrs(call)), in_shape);
  if (l.shape != out_shape) return std::nullopt;
  std::vector<int64_t> dense = contiguous_strides(l.shape);
  int64_t numel = 1;
  for (int64_t d : l.shape) numel *= d;
  if (numel == 0) return 0;
  for (size_t d = 0; d < l.shape.size(); ++d)
    if (l.shape[d] != 1 && l.strides[d] != dense[d]) return std::nullopt;
  return l.offset;
}

// ---- index_add: the scatter-add inverse of take (PyTorch's index_add) ----

// x (a, b, c), indices (i, j) int, source (a, i, j, c), axis=1 -> x's type
Type index_add_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  require_int(ctx, 1);
  require_numeric(ctx, 0);
  require_same_dtype(ctx, 0, 2);
  const Shape& idx = ctx.tensor(1).shape();
  int64_t axis = normalize_axis(ctx, ctx.attr_int("axis"), static_cast<int64_t>(x.ndim()));
  Shape want(x.shape().begin(), x.shape().begin() + axis);
  want.insert(want.end(), idx.begin(), idx.end());
  want.insert(want.end(), x.shape().begin() + axis + 1, x.shape().end());
  if (ctx.tensor(2).shape() != want)
    ctx.fail("source has shape ", shape_to_string(ctx.tensor(2).shape()), ", but taking indices ",
             shape_to_string(idx), " from x ", shape_to_string(x.shape()), " along axis ", axis, " gives ",
             shape_to_string(want));
  return ctx.arg_type(0);
}

// out = x; out[o, idx[j], :] += source[o, j, :]
template <typename U, typename I>
void scatter_add(const U* src, const I* idx, U* out, const TakeDims& t) {
  auto at = [&](int64_t j) { return idx[j] < 0 ? idx[j] + t.len : static_cast<int64_t>(idx[j]); };
  for (int64_t o = 0; o < t.outer; ++o) {
    U* dst = out + o * t.len * t.inner;
    const U* from = src + o * t.count * t.inner;
    for (int64_t j = 0; j < t.count; ++j) {
      U* row = dst + at(j) * t.inner;
      const U* add = from + j * t.inner;
      for (int64_t k = 0; k < t.inner; ++k) row[k] += add[k];
    }
  }
}

void index_add_kernel(KernelContext& ctx) {
  with_take_indices(ctx, [&](const TakeDims& t, const auto* idx) {
    const NDArray& x = ctx.in(0);
    if (x.nbytes()) std::memcpy(ctx.out().data(), x.data(), x.nbytes());
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using U = typename decltype(tag)::type;
      scatter_add(ctx.in(2).data_as<U>(), idx, ctx.out().data_as<U>(), t);
    });
  });
}

Dim index_add_flops(const CallNode& call) { return num_elements(call.args()[2]->type()->shape()); }

// ---- VJPs ----

// permute_dims(x, p): g permuted back by the inverse of p (axes=None is its own inverse)
std::vector<Expr> permute_dims_vjp(VJPContext& ctx) {
  if (!ctx.attr_opt_ints("axes")) return {ctx.make(ops::permute_dims, {ctx.grad})};
  return {make_permute_dims(ctx.grad, inverse_permutation(permute_dims_permutation(ctx.call)))};
}

// reshape, expand_dims, squeeze: g reshaped to x's shape
std::vector<Expr> reshape_back_vjp(VJPContext& ctx) {
  return {ctx.make(ops::reshape, {ctx.grad}, {{"shape", ctx.arg_type(0).shape()}})};
}

// broadcast_to: g summed back to x's shape
std::vector<Expr> broadcast_to_vjp(VJPContext& ctx) { return {ctx.collapse_to(ctx.grad, ctx.arg_type(0).shape())}; }

// collapse_sum_to: g broadcast back to x's shape
std::vector<Expr> collapse_sum_to_vjp(VJPContext& ctx) {
  return {ctx.make(ops::broadcast_to, {ctx.grad}, {{"shape", ctx.arg_type(0).shape()}})};
}

// concat((a, b, ...), axis): g split at the fields' boundaries, one piece each
std::vector<Expr> concat_vjp(VJPContext& ctx) {
  const auto& fields = ctx.call.args()[0]->type()->fields();
  int64_t axis = ctx.attr_int("axis");
  size_t n = fields[0]->ndim();
  size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(n) : axis);
  Shape points;
  Dim at(0);
  bool all_const = true;
  for (size_t i = 0; i + 1 < fields.size(); ++i) {
    at = at + fields[i]->shape()[ax];
    all_const = all_const && at.is_const();
    points.push_back(at);
  }
  AttrValue indices = points;
  if (all_const) {
    std::vector<int64_t> ints;
    for (const auto& d : points) ints.push_back(d.value());
    indices = ints;
  }
  if (fields.size() == 1) indices = int64_t{1};
  Var parts = ctx.emit(ops::split, {ctx.grad}, {{"indices_or_sections", indices}, {"axis", axis}});
  std::vector<Expr> items;
  for (size_t i = 0; i < fields.size(); ++i) items.push_back(std::make_shared<TupleGetItemNode>(parts, static_cast<int>(i)));
  return {std::make_shared<TupleNode>(std::move(items))};
}

// split(x, ..., axis): the pieces' adjoints concatenated back
std::vector<Expr> split_vjp(VJPContext& ctx) {
  return {ctx.make(ops::concat, {ctx.grad}, {{"axis", ctx.attr_int("axis")}})};
}

// take(x, indices, axis): g added into zeros at the taken positions
std::vector<Expr> take_vjp(VJPContext& ctx) {
  Expr zero = ctx.make(ops::zeros_like, {ctx.arg(0)});
  return {ctx.make(ops::index_add, {zero, ctx.arg(1), ctx.grad}, {{"axis", ctx.attr_int("axis")}}), nullptr};
}

// index_add(x, indices, source, axis): (g, none, take(g, indices, axis))
std::vector<Expr> index_add_vjp(VJPContext& ctx) {
  return {ctx.grad, nullptr, ctx.make(ops::take, {ctx.grad, ctx.arg(1)}, {{"axis", ctx.attr_int("axis")}})};
}

// where(c, x1, x2): g routed by the mask, summed back to each operand's shape
std::vector<Expr> where_vjp(VJPContext& ctx) {
  Var zero = ctx.emit(ops::zeros_like, {ctx.grad});
  return {nullptr,
          ctx.collapse_to(ctx.make(ops::where, {ctx.arg(0), ctx.grad, zero}), ctx.arg_type(1).shape()),
          ctx.collapse_to(ctx.make(ops::where, {ctx.arg(0), zero, ctx.grad}), ctx.arg_type(2).shape())};
}

// cumsum(x, axis): the reversed cumulative sum of g, as sum(g) + g - cumsum(g)
std::vector<Expr> cumsum_vjp(VJPContext& ctx) {
  int64_t axis = ctx.attr_int("axis");
  Expr total = ctx.make(ops::sum, {ctx.grad}, {{"axis", std::vector<int64_t>{axis}}, {"keepdims", true}});
  Expr upto = ctx.make(ops::cumsum, {ctx.grad}, {{"axis", axis}});
  return {ctx.make(ops::subtract, {ctx.make(ops::add, {total, ctx.grad}), upto})};
}

// triu(x, k): triu(g, k)
std::vector<Expr> triu_vjp(VJPContext& ctx) { return {ctx.make(ops::triu, {ctx.grad}, {{"k", ctx.attr_int("k")}})}; }

// strided_slice(x, ...): g written into zeros of x's shape
std::vector<Expr> strided_slice_vjp(VJPContext& ctx) {
  KwAttrs attrs = forward_attrs(ctx, {"axes", "begin", "end", "strides"});
  attrs.emplace_back("shape", ctx.arg_type(0).shape());
  return {ctx.make(ops::strided_slice_backward, {ctx.grad}, attrs)};
}

// strided_slice_backward(dy, shape, ...): the slice of g
std::vector<Expr> strided_slice_backward_vjp(VJPContext& ctx) {
  return {ctx.make(ops::strided_slice, {ctx.grad}, forward_attrs(ctx, {"axes", "begin", "end", "strides"}))};
}

}  // namespace

std::vector<int64_t> permute_dims_permutation(const CallNode& call) {
  int64_t n = static_cast<int64_t>(call.args()[0]->type()->ndim());
  const AttrValue& axes = lookup_attr(call.op(), call.attrs(), "axes");
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (std::holds_alternative<NoneValue>(axes)) {
      p[static_cast<size_t>(i)] = n - 1 - i;
    } else {
      int64_t a = std::get<std::vector<int64_t>>(axes)[static_cast<size_t>(i)];
      p[static_cast<size_t>(i)] = a < 0 ? a + n : a;
    }
  }
  return p;
}

bool is_identity_permutation(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool swaps_last_two(const std::vector<int64_t>& p) {
  size_t n = p.size();
  if (n < 2) return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return p[n - 2] == static_cast<int64_t>(n - 1) && p[n - 1] == static_cast<int64_t>(n - 2);
}

bool is_transpose(const CallNode* c) {
  return is_call_of(c, ops::permute_dims) && swaps_last_two(permute_dims_permutation(*c));
}

std::vector<int64_t> transpose_permutation(size_t n) {
  std::vector<int64_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
  std::swap(p[n - 1], p[n - 2]);
  return p;
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& p) {
  std::vector<int64_t> q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return q;
}

Call make_permute_dims(const Expr& x, const std::vector<int64_t>& p) {
  bool reverses_rank_2 = p.size() == 2 && p[0] == 1 && p[1] == 0;
  if (reverses_rank_2) return ops::permute_dims({x});
  return ops::permute_dims({x}, {{"axes", p}});
}

Call make_transpose(const Expr& x) { return make_permute_dims(x, transpose_permutation(x->type()->ndim())); }

void register_manipulate_ops(OpRegistry& reg) {
  reg.define(ops::permute_dims).set_args({"x"})
      .add_attr("axes", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(permute_dims_type).set_flops(zero_flops)
      .set_kernel(permute_dims_kernel).set_vjp(permute_dims_vjp)
      .set_doc(R"doc(Permutes the axes of x: output axis i is input axis `axes[i]`; axes=None reverses them all. NumPy:
`np.transpose(x, axes)`. PyTorch: `torch.permute(x, axes)` (for axes=None,
`x.permute(*reversed(range(x.ndim)))`).

Type: any tensor x; axes None or a permutation of all of x's axes (negative ones count from the end) -> x's dims in that order, x's dtype; an axes list of another length, or with a repeated or out-of-range axis, is a TypeInferenceError.
VJP: `grad_x = permute_dims(grad, axes=<the inverse permutation of axes>)`; for axes=None, `grad_x = permute_dims(grad)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::reshape).set_args({"x"})
      .add_attr("shape", AttrKind::kReshapeShape)
      .set_type_rule(reshape_type).set_flops(zero_flops)
      .set_kernel(copy_kernel).set_vjp(reshape_back_vjp).set_view(true)
      .set_doc(R"doc(The elements of x in row-major order under a new `shape`; one dim of shape may be -1, inferred from
x's element count. NumPy: `np.reshape(x, shape)`. PyTorch: `torch.reshape(x, shape)`.

Dims may be symbolic: x ("n - 1", 2, 2) reshapes to ("n - 1", -1), the -1 inferred as 4 by
cancelling the dims both shapes share. A 0 in shape is a dim of size 0 (not "copy this dim"). The
executor hands x's buffer over instead of copying when x dies at this binding (a view).

Type: any tensor x; shape of constant or symbolic dims, none negative but at most one -1 -> shape, x's dtype; the element counts must be provably equal. A second -1, another negative dim, a -1 whose other dims hold no elements or do not provably divide x's element count, or unequal counts, is a TypeInferenceError.
VJP: `grad_x = reshape(grad, shape=x.shape)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::broadcast_to).set_args({"x"})
      .add_attr("shape", AttrKind::kShape)
      .set_type_rule(broadcast_to_type).set_flops(zero_flops)
      .set_kernel(broadcast_to_kernel).set_vjp(broadcast_to_vjp)
      .set_doc(R"doc(x broadcast to `shape` by NumPy's rules: x's dims, aligned at the right, each equal to the target's
or 1, with leading dims added. NumPy: `np.broadcast_to(x, shape)`. PyTorch:
`torch.broadcast_to(x, shape)`.

The result is a new contiguous array (NumPy and PyTorch return a view with zero strides).

Type: any tensor x; shape -> shape, x's dtype; a rank above shape's, or a dim of x that is neither 1 nor provably equal to the target's, is a TypeInferenceError.
VJP: `grad_x = collapse_sum_to(grad, shape=x.shape)` (just `grad` when the shapes are equal).
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::collapse_sum_to).set_args({"x"})
      .add_attr("shape", AttrKind::kShape)
      .set_type_rule(collapse_sum_to_type).set_flops(per_input_element_flops<1>)
      .set_kernel(collapse_sum_to_kernel).set_vjp(collapse_sum_to_vjp)
      .set_doc(R"doc(Sums x down to `shape`, the reverse of broadcast_to: the leading axes x has beyond shape's rank are
summed away, and so is every axis where shape has 1 and x does not (kept as 1). It is the gradient
of broadcasting: the VJPs of broadcast_to and of the broadcasting elementwise ops emit it. NumPy:
none
(`x.sum(axis=tuple(range(x.ndim - len(shape)))).sum(axis=tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True)`).
PyTorch: `x.sum_to_size(shape)`.

Floats are summed pairwise (as NumPy's sum), integers wrap on overflow, and bools combine with
logical or (as NumPy's add on bools).

Type: any tensor x; shape that broadcasts to x's shape -> shape, x's dtype; a shape that does not (provably) broadcast to x's is a TypeInferenceError.
VJP: `grad_x = broadcast_to(grad, shape=x.shape)`.
FLOPs: one per element of x.
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::expand_dims).set_args({"x"})
      .add_attr("axis", AttrKind::kIntList)
      .set_type_rule(expand_dims_type).set_flops(zero_flops)
      .set_kernel(copy_kernel).set_vjp(reshape_back_vjp).set_view(true)
      .set_doc(R"doc(Inserts axes of size 1 into x at the positions `axis` lists; the positions index the output (rank
x.ndim + len(axis)), negative ones counting from its end: x (a, b) with axis=[0, -1] gives (1, a, b,
1). NumPy: `np.expand_dims(x, axis)`. PyTorch: `torch.unsqueeze(x, *axis)` (one axis at a time).

Like reshape, it takes over x's buffer when x dies at this binding (a view).

Type: any tensor x; axis an int or a list of distinct ints in [-r, r) for the output rank r -> x's dims with a 1 at each listed position, x's dtype; an out-of-range or repeated axis is a TypeInferenceError.
VJP: `grad_x = reshape(grad, shape=x.shape)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::squeeze).set_args({"x"})
      .add_attr("axis", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(squeeze_type).set_flops(zero_flops)
      .set_kernel(copy_kernel).set_vjp(reshape_back_vjp).set_view(true)
      .set_doc(R"doc(Removes axes of size 1 from x: those `axis` lists, or for axis=None every axis whose dim is the
constant 1. NumPy: `np.squeeze(x, axis)`. PyTorch: `torch.squeeze(x, axis)` (which leaves a listed
axis that is not 1 in place, where ours fails).

Only constant 1 dims squeeze: axis=None keeps a symbolic dim even when it is 1 at run time. Like
reshape, it takes over x's buffer when x dies at this binding (a view).

Type: any tensor x; axis None or a list of distinct axes in [-x.ndim, x.ndim) -> x without the dropped dims, x's dtype; listing an axis whose dim is not the constant 1 is a TypeInferenceError.
VJP: `grad_x = reshape(grad, shape=x.shape)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::concat).set_args({"tensors"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(concat_type).set_flops(zero_flops)
      .set_kernel(concat_kernel).set_vjp(concat_vjp)
      .set_doc(R"doc(Joins a tuple of tensors along an existing `axis` (default 0). NumPy:
`np.concatenate(tensors, axis)`. PyTorch: `torch.cat(tensors, axis)`.

`tensors` is one tuple-typed argument: from Python, a list or tuple of exprs, or a var of tuple
type.

Type: a non-empty tuple of tensors of one dtype and one rank >= 1, their dims equal except along axis (in [-rank, rank)) -> those dims with the axis dims added up (symbolically when symbolic), the fields' dtype; a field that is not a tensor, a rank-0 field, or a differing dtype, rank or other dim is a TypeInferenceError.
VJP: `grad_tensors = split(grad, indices_or_sections=<the running totals of the fields' axis dims>, axis)`, one piece per field.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::split).set_args({"x"})
      .add_attr("indices_or_sections", AttrKind::kIntOrIntList)
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(split_type).set_flops(zero_flops)
      .set_kernel(split_kernel).set_vjp(split_vjp)
      .set_doc(R"doc(Splits x along `axis` (default 0) into a tuple of tensors: `indices_or_sections` an int k gives k
equal parts; a list of indices [i, j, ...] gives the parts [0, i), [i, j), ..., [last, end) of the
axis. NumPy: `np.split(x, indices_or_sections, axis)`. PyTorch:
`torch.tensor_split(x, indices_or_sections, axis)` (which also splits unevenly for an int, where
ours fails).

Indices may be symbolic dims, such as ["n", "n + 3"]. Unlike NumPy, indices must be non-negative,
non-decreasing and at most the axis length (NumPy clamps them and gives empty parts).

Type: x of rank >= 1; axis in range -> a tuple of tensors of x's dtype with x's dims but along axis. An int k must be positive, and k > 1 needs a constant axis length divisible by k; a negative, decreasing or past-the-end index is a TypeInferenceError.
VJP: `grad_x = concat(grad, axis)`, grad being the tuple of the parts' adjoints.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::take).set_args({"x", "indices"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(take_type).set_flops(zero_flops)
      .set_kernel(take_kernel).set_may_fail().set_vjp(take_vjp)
      .set_doc(R"doc(Gathers the entries of x along `axis` (default 0) at integer `indices` of any shape: out[a..., j...,
b...] = x[a..., indices[j...], b...], negative indices counting from the end. NumPy:
`np.take(x, indices, axis)`. PyTorch: `torch.index_select(x, axis, indices)` (for 1-D indices, none
negative).

An index outside [-len, len) along the axis is an ExecutionError at run time naming the index, the
axis and x's shape, raised before anything is read (as NumPy's default mode="raise"); there is no
clip or wrap mode.

Type: x of rank >= 1, any dtype; indices int32 or int64 of any shape; axis in range -> x.shape[:axis] + indices.shape + x.shape[axis + 1:], x's dtype.
VJP: `grad_x = index_add(zeros_like(x), indices, grad, axis)`; indices get none.
FLOPs: 0 (moves data only).
Dtypes: all for x (float32, float64, int32, int64, bool); int32, int64 for indices.)doc");
  // index_add does one add per source element.
  reg.define(ops::index_add).set_args({"x", "indices", "source"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(index_add_type).set_flops(index_add_flops)
      .set_kernel(index_add_kernel).set_may_fail().set_vjp(index_add_vjp)
      .set_doc(R"doc(x with `source` added at `indices` along `axis` (default 0): out = x, then out[a..., indices[j...],
b...] += source[a..., j..., b...] for every j, repeated indices accumulating. It is take's
transpose; take's VJP emits it. NumPy:
`out = x.copy(); np.add.at(out, (slice(None),) * axis + (indices,), source)`, leaving the result in
`out`. PyTorch: `torch.index_add(x, axis, indices, source)` (for 1-D indices).

Indices count from the end when negative; one outside [-len, len) is an ExecutionError at run time,
as in take.

Type: x numeric; indices int32 or int64 of any shape; source of x's dtype with the shape take(x, indices, axis) has, x.shape[:axis] + indices.shape + x.shape[axis + 1:] -> x's type; anything else is a TypeInferenceError.
VJP: `grad_x = grad`, `grad_source = take(grad, indices, axis)`; indices get none.
FLOPs: one per element of source.
Dtypes: float32, float64, int32, int64 for x and source (not bool); int32, int64 for indices.)doc");
  reg.define(ops::where).set_args({"condition", "x1", "x2"})
      .set_type_rule(where_type).set_flops(zero_flops)
      .set_kernel(where_kernel).set_block(where_block).set_vjp(where_vjp)
      .set_doc(R"doc(Elementwise choice: x1 where `condition` is true, x2 where it is false, the three broadcast together
by NumPy's rules. NumPy: `np.where(condition, x1, x2)`. PyTorch: `torch.where(condition, x1, x2)`.

Type: condition bool; x1 and x2 of one dtype (no promotion, unlike NumPy) -> the broadcast shape of all three, x1's dtype; shapes that do not provably broadcast are a TypeInferenceError.
VJP: condition gets none; `grad_x1 = collapse_sum_to(where(condition, grad, zeros_like(grad)), shape=x1.shape)`, `grad_x2 = collapse_sum_to(where(condition, zeros_like(grad), grad), shape=x2.shape)` (no collapse_sum_to where the shapes are equal).
FLOPs: 0 (moves data only).
Dtypes: bool for condition; all for x1 and x2 (float32, float64, int32, int64, bool).)doc");
  // cumsum does one add per element.
  reg.define(ops::cumsum).set_args({"x"})
      .add_attr("axis", AttrKind::kInt, int64_t{-1})
      .set_type_rule(cumsum_type).set_flops(elementwise_flops)
      .set_kernel(cumsum_kernel).set_vjp(cumsum_vjp)
      .set_doc(R"doc(Running sum along `axis` (default -1): out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...].
NumPy: `np.cumsum(x, axis)`. PyTorch: `torch.cumsum(x, axis)`.

The result keeps x's dtype: int32 stays int32 and wraps on overflow (NumPy accumulates int32 in
int64 and returns int64). The sums run in order along the axis.

Type: x numeric; axis in [-x.ndim, x.ndim) -> x's type; bool x or an out-of-range axis is a TypeInferenceError.
VJP: `grad_x = subtract(add(sum(grad, axis=[axis], keepdims=True), grad), cumsum(grad, axis))`, the reversed running sum of grad.
FLOPs: one per element.
Dtypes: float32, float64, int32, int64.)doc");
  reg.define(ops::triu).set_args({"x"})
      .add_attr("k", AttrKind::kInt, int64_t{0})
      .set_type_rule(triu_type).set_flops(zero_flops)
      .set_kernel(triu_kernel).set_vjp(triu_vjp)
      .set_doc(R"doc(The upper triangle of each matrix in x's last two axes: entry (i, j) is kept when j >= i + k and
zeroed (false for bool) otherwise; k > 0 moves the diagonal up, k < 0 down. NumPy: `np.triu(x, k)`.
PyTorch: `torch.triu(x, k)`.

Type: x of rank >= 2 -> x's type; a lower rank is a TypeInferenceError.
VJP: `grad_x = triu(grad, k)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  // strided_slice moves data only; it reads x in place when the slice is one
  // contiguous block of x and x dies there (the executor's views).
  reg.define(ops::strided_slice).set_args({"x"})
      .add_attr("axes", AttrKind::kIntList).add_attr("begin", AttrKind::kIntList)
      .add_attr("end", AttrKind::kIntList).add_attr("strides", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(strided_slice_type).set_flops(zero_flops)
      .set_kernel(strided_slice_kernel).set_may_fail().set_vjp(strided_slice_vjp)
      .set_view_offset(strided_slice_view_offset)
      .set_doc(R"doc(Python slicing along listed axes: axis `axes[i]` becomes x[begin[i]:end[i]:strides[i]] along it, and
the other axes stay whole; strides=None means step 1 everywhere. NumPy:
`x[(slice(None),) * axes[0] + (slice(begin[0], end[0], strides and strides[0]),)]` for one axis (one
such slice per listed axis). PyTorch:
`x[(slice(None),) * axes[0] + (slice(begin[0], end[0], strides and strides[0]),)]` likewise, for
positive strides only (PyTorch has no negative slice steps; flip with `torch.flip`).

Bounds follow Python's `slice.indices`: a negative bound counts from the end, then bounds are
clamped to [0, len] for a positive stride and to [-1, len - 1] for a negative one, so an empty or
out-of-range slice is an axis of length 0, never an error, and x[100:-100:-3] of 10 elements is [9,
6, 3, 0]. A negative stride walks backwards. Bounds may be any int64; 2**63 - 1 means "to the end"
(for a negative stride, -(2**63 - 1) means "through index 0").

On a symbolic axis n the slice's length must be a polynomial: stride 1 or -1 with bounds taken to be
in range (x[1:-1] has n - 2 elements), or any stride when the distance from begin to end is constant
(x[-6:-1:2] has 3); the kernel then fails (ExecutionError) when a run's n puts a bound out of range.
When the slice is one contiguous block of x and x dies at this binding, the output is x's buffer at
an offset (a view).

Type: any tensor x; axes distinct and in range; begin, end and strides (when given) one entry per listed axis; no zero stride -> x's shape with each listed axis sliced, x's dtype. A length mismatch, a zero stride, a repeated or out-of-range axis, or a symbolic length that is not a polynomial is a TypeInferenceError.
VJP: `grad_x = strided_slice_backward(grad, shape=x.shape, axes, begin, end, strides)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
  reg.define(ops::strided_slice_backward).set_args({"dy"})
      .add_attr("shape", AttrKind::kShape)
      .add_attr("axes", AttrKind::kIntList).add_attr("begin", AttrKind::kIntList)
      .add_attr("end", AttrKind::kIntList).add_attr("strides", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(strided_slice_backward_type).set_flops(zero_flops)
      .set_kernel(strided_slice_backward_kernel).set_may_fail().set_vjp(strided_slice_backward_vjp)
      .set_doc(R"doc(The gradient of strided_slice, which strided_slice's VJP emits: zeros of `shape` with `dy` written
into the elements `strided_slice(z, axes, begin, end, strides)` reads from a tensor `z` of that shape. The slice's
elements are distinct, so nothing accumulates. NumPy:
`out = np.zeros(shape, dy.dtype); out[(slice(None),) * axes[0] + (slice(begin[0], end[0], strides and strides[0]),)] = dy`
for one axis, leaving the result in `out`. PyTorch: none (aten's `slice_backward` for one axis and a
positive step).

The attrs `axes`, `begin`, `end` and `strides` are strided_slice's, with the same clamping and
symbolic-dim rules, applied to `shape`.

Type: dy any tensor; shape; the slice attrs checked against shape as in strided_slice -> shape, dy's dtype; dy's shape must equal the slice's (else a TypeInferenceError).
VJP: `grad_dy = strided_slice(grad, axes, begin, end, strides)`.
FLOPs: 0 (moves data only).
Dtypes: all (float32, float64, int32, int64, bool).)doc");
}

}  // namespace aj
