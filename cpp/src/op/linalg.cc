// Linear algebra: matmul with NumPy semantics (1-D operands, batched with
// broadcast batch dims) and an optional out_dtype: type rule, VJP, FLOPs
// and kernel. The kernel runs float
// matmuls through OpenBLAS sgemm/dgemm, with transposed operands passed as
// GEMM transpose flags and a batch folded into one GEMM when it can be.
#include <algorithm>
#include <cstring>
#include <optional>

#include "adjoint/autodiff/vjp.h"
#include "adjoint/op/linalg.h"
#include "adjoint/op/manipulate.h"
#include "adjoint/runtime/blas.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// (..., m, k) x (..., k, n) -> (broadcast(...), m, n); a 1-D operand gets a
// unit dim added (front for x1, back for x2) that is dropped from the result.
Type matmul_type(const TypeContext& ctx) {
  const TypeNode& a = ctx.tensor(0);
  const TypeNode& b = ctx.tensor(1);
  require_same_dtype(ctx, 0, 1);
  if (a.ndim() == 0 || b.ndim() == 0)
    ctx.fail("operands must have rank >= 1, got shapes ", shape_to_string(a.shape()), " and ",
             shape_to_string(b.shape()));
  Shape sa = a.shape(), sb = b.shape();
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim(1));
  if (b_vec) sb.push_back(Dim(1));
  const Dim& k1 = sa[sa.size() - 1];
  const Dim& k2 = sb[sb.size() - 2];
  if (k1 != k2)
    ctx.fail("contraction dims differ: x1 ", shape_to_string(a.shape()), " has ", k1.to_string(),
             ", x2 ", shape_to_string(b.shape()), " has ", k2.to_string());
  Shape batch = broadcast_shapes(ctx, Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  if (!a_vec) batch.push_back(sa[sa.size() - 2]);
  if (!b_vec) batch.push_back(sb[sb.size() - 1]);
  DType out = ctx.attr_opt_dtype("out_dtype").value_or(a.dtype());
  return TypeNode::tensor(std::move(batch), out);
}

// 2 * (output elements) * k
Dim matmul_call_flops(const CallNode& call) { return matmul_flops(*call.args()[0]->type(), *call.type()); }


// The operands as matrices: logical (m, k) x (k, n), over a broadcast batch.
struct GemmShape {
  int64_t m, k, n;
  std::vector<int64_t> batch;            // broadcast batch dims of the output
  std::vector<int64_t> a_batch_strides;  // in matrices (0 where broadcast)
  std::vector<int64_t> b_batch_strides;
  bool ta, tb;                           // stored transposed (GEMM flags)
  int64_t lda, ldb;                      // row-major leading dims of the stored operands
};

GemmShape gemm_shape(const KernelContext& ctx) {
  GemmShape g;
  g.ta = ctx.transposed[0];
  g.tb = ctx.transposed[1];
  std::vector<int64_t> sa = ctx.in(0).shape(), sb = ctx.in(1).shape();
  if (g.ta) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (g.tb) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  g.m = sa[sa.size() - 2];
  g.k = sa[sa.size() - 1];
  g.n = sb[sb.size() - 1];
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t nb = std::max(ba.size(), bb.size());
  g.batch.assign(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    int64_t da = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    int64_t db = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    g.batch[i] = std::max(da, db);
    if (da == 0 || db == 0) g.batch[i] = 0;
  }
  g.a_batch_strides = broadcast_strides(ba, g.batch);
  g.b_batch_strides = broadcast_strides(bb, g.batch);
  g.lda = g.ta ? g.m : g.k;
  g.ldb = g.tb ? g.k : g.n;
  return g;
}

// The batch as one run with a fixed stride per operand (in matrices), when
// its dims merge into one for all three operands: (count, a, b, c strides).
struct StridedBatch {
  int64_t count, a, b, c;
};

std::optional<StridedBatch> strided_batch(const GemmShape& g) {
  std::vector<int64_t> c_strides = contiguous_strides(g.batch);
  std::optional<StridedBatch> run;
  for (size_t d = 0; d < g.batch.size(); ++d) {
    if (g.batch[d] == 1) continue;
    StridedBatch dim{g.batch[d], g.a_batch_strides[d], g.b_batch_strides[d], c_strides[d]};
    if (!run) {
      run = dim;
      continue;
    }
    bool merges = run->a == dim.a * dim.count && run->b == dim.b * dim.count && run->c == dim.c * dim.count;
    if (!merges) return std::nullopt;
    *run = {run->count * dim.count, dim.a, dim.b, dim.c};
  }
  return run;
}

// A naive product for integer and bool dtypes and for a differing out_dtype:
// accumulates in Acc and converts to O as astype does (no UB out of range).
template <typename T, typename O, typename Acc>
void naive_matmul(const GemmShape& g, const T* a, const T* b, O* c) {
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      Acc acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        T x = g.ta ? a[p * g.lda + i] : a[i * g.lda + p];
        T y = g.tb ? b[j * g.ldb + p] : b[p * g.ldb + j];
        if constexpr (std::is_integral_v<Acc>) acc = wrap_add(acc, wrap_mul(Acc(x), Acc(y)));  // NumPy wraps
        else acc += static_cast<Acc>(x) * static_cast<Acc>(y);
      }
      c[i * g.n + j] = convert_value<O, Acc>(acc);
    }
}

template <typename T, typename O>
void matmul_typed(const KernelContext& ctx, const GemmShape& g) {
  const T* a = ctx.in(0).data_as<T>();
  const T* b = ctx.in(1).data_as<T>();
  O* c = ctx.out().data_as<O>();
  constexpr bool use_blas = std::is_same_v<T, O> && std::is_floating_point_v<T>;
  int64_t a_size = g.m * g.k, b_size = g.k * g.n, c_size = g.m * g.n;
  if (c_size == 0 || ctx.out().numel() == 0) return;
  if (g.k == 0) {
    std::memset(static_cast<void*>(c), 0, ctx.out().nbytes());
    return;
  }
  bool b_shared = std::all_of(g.b_batch_strides.begin(), g.b_batch_strides.end(), [](int64_t s) { return s == 0; });
  bool a_dense = !g.ta && ctx.in(0).numel() == a_size * std::max<int64_t>(1, ctx.out().numel() / c_size);
  if constexpr (use_blas) {
    if (b_shared && a_dense) {  // (batch, m, k) x (k, n): one GEMM with M = batch * m
      blas::gemm(false, g.tb, ctx.out().numel() / g.n, g.n, g.k, a, g.lda, b, g.ldb, T(0), c, g.n);
      return;
    }
    auto sb = strided_batch(g);  // many small GEMMs with fixed strides: one batched call
    if (sb && sb->count > 1 && ctx.out().numel() < (int64_t{1} << 31) && ctx.in(0).numel() < (int64_t{1} << 31) &&
        ctx.in(1).numel() < (int64_t{1} << 31)) {
      blas::gemm_batch_strided(g.ta, g.tb, g.m, g.n, g.k, a, g.lda, sb->a * a_size, b, g.ldb, sb->b * b_size, c, g.n,
                               sb->c * c_size, sb->count);
      return;
    }
  }
  strided_loop<3>(g.batch, {contiguous_strides(g.batch), g.a_batch_strides, g.b_batch_strides},
                  [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& s) {
                    for (int64_t r = 0; r < len; ++r) {
                      const T* pa = a + (off[1] + r * s[1]) * a_size;
                      const T* pb = b + (off[2] + r * s[2]) * b_size;
                      O* pc = c + (off[0] + r * s[0]) * c_size;
                      if constexpr (use_blas) {
                        blas::gemm(g.ta, g.tb, g.m, g.n, g.k, pa, g.lda, pb, g.ldb, T(0), pc, g.n);
                      } else {
                        using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
                        naive_matmul<T, O, Acc>(g, pa, pb, pc);
                      }
                    }
                  });
}

void matmul_kernel(KernelContext& ctx) {
  GemmShape g = gemm_shape(ctx);
  dispatch_dtype(ctx.in(0).dtype(), [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    dispatch_dtype(ctx.out().dtype(), [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      matmul_typed<T, O>(ctx, g);
    });
  });
}


// grad_a = g @ T(b), grad_b = T(a) @ g, each summed over broadcast batch dims.
// A 1-D operand is first made a matrix ((k,) -> (1, k) for a, (k, 1) for b),
// with g given the matching unit dims, and its adjoint reshaped back.
std::vector<Expr> matmul_vjp(VJPContext& ctx) {
  Expr a = ctx.arg(0), b = ctx.arg(1), g = ctx.grad;
  const TypeNode& ta = ctx.arg_type(0);
  const TypeNode& tb = ctx.arg_type(1);
  if (!is_float(ta.dtype())) return {nullptr, nullptr};
  if (g->type()->dtype() != ta.dtype())
    g = ctx.emit(ops::astype, {g}, {{"dtype", ta.dtype()}});
  bool a_vec = ta.ndim() == 1, b_vec = tb.ndim() == 1;
  if (a_vec) {
    a = ctx.emit(ops::expand_dims, {a}, {{"axis", std::vector<int64_t>{0}}});
    g = ctx.emit(ops::expand_dims, {g}, {{"axis", std::vector<int64_t>{-2 + (b_vec ? 1 : 0)}}});
  }
  if (b_vec) {
    b = ctx.emit(ops::expand_dims, {b}, {{"axis", std::vector<int64_t>{-1}}});
    g = ctx.emit(ops::expand_dims, {g}, {{"axis", std::vector<int64_t>{-1}}});
  }
  Expr grad_a = ctx.make(ops::matmul, {g, make_transpose(b)});
  Expr grad_b = ctx.make(ops::matmul, {make_transpose(a), g});
  grad_a = ctx.collapse_to(grad_a, a->type()->shape());
  grad_b = ctx.collapse_to(grad_b, b->type()->shape());
  if (a_vec) grad_a = ctx.make(ops::reshape, {grad_a}, {{"shape", ta.shape()}});
  if (b_vec) grad_b = ctx.make(ops::reshape, {grad_b}, {{"shape", tb.shape()}});
  return {grad_a, grad_b};
}

}  // namespace

Dim matmul_flops(const TypeNode& lhs, const TypeNode& out) {
  return Dim(2) * num_elements(out.shape()) * lhs.shape().back();
}

std::optional<DType> matmul_out_dtype(const CallNode& call) {
  const AttrValue& out_dtype = lookup_attr(call.op(), call.attrs(), "out_dtype");
  if (std::holds_alternative<NoneValue>(out_dtype)) return std::nullopt;
  return std::get<DType>(out_dtype);
}

void register_linalg_ops(OpRegistry& reg) {
  reg.define(ops::matmul).set_args({"x1", "x2"})
      .add_attr("out_dtype", AttrKind::kOptDType, NoneValue{})
      .set_type_rule(matmul_type).set_flops(matmul_call_flops).set_kernel(matmul_kernel).set_vjp(matmul_vjp)
      .set_doc(R"doc(
Matrix product with NumPy's rules: `(..., m, k) @ (..., k, n) -> (..., m, n)`, the batch dims `...` broadcast; a 1-D `x1` is a row `(1, k)` and a 1-D `x2` a column `(k, 1)`, whose unit dim is dropped from the result (two 1-D operands give their dot product, a scalar). NumPy: `np.matmul(x1, x2)`. PyTorch: `torch.matmul(x1, x2)`.
`out_dtype` is the result's dtype; `None`, the default, keeps the operands' dtype. Float operands whose result keeps their dtype run through OpenBLAS (sgemm, dgemm; sgemv, dgemv when the result is one row or column); otherwise each element is accumulated in float64 (float operands) or int64 (int and bool operands) and converted to the result's dtype as `astype` converts, so ints wrap and a bool product is true where some `x1[i, p] and x2[p, j]` is. TVM Relax's `matmul` has the same `out_dtype` attr.

Type: `x1` and `x2` must have the same dtype and rank at least 1; the contraction dims (`x1`'s last, `x2`'s second to last, or its only) must be equal, symbolic dims as polynomials; the batch dims broadcast as NumPy's. The result is `(broadcast batch, m, n)`, without `m` for a 1-D `x1` and without `n` for a 1-D `x2`, of dtype `out_dtype` or the operands'. A scalar operand, differing dtypes or contraction dims, and batch dims that do not broadcast are TypeInferenceErrors.
VJP: `grad_x1 = collapse_sum_to(matmul(grad, permute_dims(x2, axes=<last two swapped>)), shape=<x1's shape>)`, `grad_x2 = collapse_sum_to(matmul(permute_dims(x1, axes=<last two swapped>), grad), shape=<x2's shape>)`, each `collapse_sum_to` left out where the shape already is the operand's. A 1-D operand is first made a matrix with `expand_dims` (and `grad` given the matching unit dims), and its gradient reshaped back; when `out_dtype` differs from the operands' dtype, `grad` is first cast to it with `astype`. Int and bool operands get no gradient.
FLOPs: `2 * (result elements) * k`, with `k` the contraction dim (`2*m*k*n` for `(m, k) @ (k, n)`, `2*k` for a dot product).
Dtypes: all: float32, float64, int32, int64, bool, the same for both operands; `out_dtype` any of them.
)doc");
}

}  // namespace aj
