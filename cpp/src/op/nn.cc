// Neural-network ops: softmax and log_softmax, layer_norm, the losses
// cross_entropy_with_logits and nll_loss, and the NCHW sliding-window ops
// conv2d (OIHW weights), max_pool2d and avg_pool2d, with their type rules,
// CPU kernels and VJPs; and the backward ops their VJPs emit (as TVM's):
// nll_loss_backward, conv2d_backward_data, conv2d_backward_weight,
// max_pool2d_backward and avg_pool2d_backward.
//
// Kernels: the row-wise ops (softmax, log_softmax, layer_norm, the losses)
// run tight loops over contiguous rows when they work on the last axis (or
// trailing axes), with strided paths for other axes; softmaxes subtract the
// row max; sums are pairwise. conv2d unfolds each (image, group) with im2col
// and multiplies by the group's weights in one OpenBLAS GEMM; its data
// gradient multiplies by the transposed weights and folds back with col2im,
// its weight gradient multiplies output_grad by the transposed im2col. Pools
// visit each window's in-bounds taps: padding acts as -inf for max_pool2d and
// is left out of avg_pool2d's divisor unless count_include_pad; their
// backward ops route each output_grad element to the window's first maximal
// tap (max, as PyTorch) or spread it over the counted taps (avg).
//
// VJPs recompute what they need (layer_norm's mean and 1/std, the losses'
// log_softmax) rather than keep forward intermediates.
//
// Each registration ends with the op's reference text (set_doc): its
// docstring and its entry in docs/ops.md, with the conv/pool layouts, what
// the losses' labels must be and how they differ from TVM's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "adjoint/autodiff/vjp.h"
#include "adjoint/op/manipulate.h"
#include "adjoint/runtime/blas.h"
#include "adjoint/runtime/kernel.h"
#include "adjoint/runtime/kernel_util.h"
#include "families.h"
#include "op_util.h"

namespace aj {
namespace {

// x float (...), axis in range -> same type
Type softmax_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  normalize_axis(ctx, ctx.attr_int("axis"), static_cast<int64_t>(ctx.tensor(0).ndim()));
  return ctx.arg_type(0);
}

// x float (a, b, c), gamma and beta (b, c) for axes=[1, 2] -> x's type
Type layer_norm_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  require_same_dtype(ctx, 0, 2);
  const TypeNode& x = ctx.tensor(0);
  const auto& axes = ctx.attr_ints("axes");
  if (axes.empty()) ctx.fail("attr 'axes' must name at least one axis");
  if (!(ctx.attr_float("epsilon") >= 0))
    ctx.fail("attr 'epsilon' must be non-negative, got ", attr_to_string(ctx.attr("epsilon")));
  Shape normalized;
  for (auto a : normalize_axes(ctx, axes, static_cast<int64_t>(x.ndim())))
    normalized.push_back(x.shape()[a]);
  for (size_t i : {1, 2})
    if (ctx.tensor(i).shape() != normalized)
      ctx.fail("argument '", ctx.op.arg_names[i], "' has shape ",
               shape_to_string(ctx.tensor(i).shape()), ", expected ",
               shape_to_string(normalized), ": the dims of x ", shape_to_string(x.shape()),
               " at axes ", attr_to_string(axes));
  return ctx.arg_type(0);
}

// logits, labels float (n, c) -> (): the mean over the batch of
// -sum(labels * log_softmax(logits, -1), -1); for rank 1 (c,) -> () that sum.
Type cross_entropy_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  const TypeNode& logits = ctx.tensor(0);
  const TypeNode& labels = ctx.tensor(1);
  if (logits.ndim() < 1 || logits.ndim() > 2)
    ctx.fail("argument 'logits' must have rank 1 or 2, got shape ",
             shape_to_string(logits.shape()));
  if (labels.shape() != logits.shape())
    ctx.fail("arguments 'logits' and 'labels' must have the same shape, got ",
             shape_to_string(logits.shape()), " and ", shape_to_string(labels.shape()));
  return TypeNode::tensor({}, logits.dtype());
}

// The reduction attr of nll_loss and nll_loss_backward, read once here.
enum class NllReduction { kMean, kSum, kNone };

struct NllReductionName {
  NllReduction reduction;
  const char* name;
};
constexpr NllReductionName kNllReductions[] = {
    {NllReduction::kMean, "mean"}, {NllReduction::kSum, "sum"}, {NllReduction::kNone, "none"}};

const char* nll_reduction_name(NllReduction r) {
  for (const auto& [reduction, name] : kNllReductions)
    if (reduction == r) return name;
  return "?";
}

// The reduction `ctx`'s call asks for; fails naming the choices when it is
// none of them. Ctx: a TypeContext or a KernelContext.
template <class Ctx>
NllReduction nll_reduction(const Ctx& ctx) {
  const std::string& given = ctx.attr_string("reduction");
  for (const auto& [reduction, name] : kNllReductions)
    if (given == name) return reduction;
  std::string choices;
  for (const auto& choice : kNllReductions) choices += str(choices.empty() ? "" : ", ", '"', choice.name, '"');
  ctx.fail("attr 'reduction' must be one of ", choices, ", got \"", given, "\"");
}

// predictions float (n, c) at arg p, targets int (n,) at arg p + 1 -> ()
// when reducing (mean, sum), (n,) for none; unbatched predictions (c,),
// targets () -> ().
Shape nll_loss_shape(const TypeContext& ctx, size_t p) {
  require_float(ctx, p);
  require_int(ctx, p + 1);
  const TypeNode& pred = ctx.tensor(p);
  const TypeNode& targets = ctx.tensor(p + 1);
  NllReduction reduction = nll_reduction(ctx);
  if (pred.ndim() < 1 || pred.ndim() > 2)
    ctx.fail("argument 'predictions' must have shape (N, C) or (C,), got ",
             shape_to_string(pred.shape()));
  Shape batch(pred.shape().begin(), pred.shape().end() - 1);
  if (targets.shape() != batch)
    ctx.fail("argument 'targets' must have shape ", shape_to_string(batch), " for predictions ",
             shape_to_string(pred.shape()), ", got ", shape_to_string(targets.shape()));
  return reduction == NllReduction::kNone ? batch : Shape{};
}

Type nll_loss_type(const TypeContext& ctx) {
  return TypeNode::tensor(nll_loss_shape(ctx, 0), ctx.tensor(0).dtype());
}

// ---- sliding windows (conv2d, pools) ----

// An attr of 1 or 2 positive ints as (h, w); [s] means (s, s). Ctx: a
// TypeContext or a KernelContext.
template <class Ctx>
std::array<int64_t, 2> positive_pair_attr(const Ctx& ctx, const char* name) {
  const auto& v = ctx.attr_ints(name);
  if (v.empty() || v.size() > 2)
    ctx.fail("attr '", name, "' must hold 1 or 2 ints, got ", attr_to_string(v));
  for (auto i : v)
    if (i <= 0) ctx.fail("attr '", name, "' must hold positive ints, got ", attr_to_string(v));
  return {v.front(), v.back()};
}

// padding: 1 int, 2 (h, w) or 4 (top, left, bottom, right) non-negative ints,
// returned as (top, left, bottom, right).
template <class Ctx>
std::array<int64_t, 4> padding_attr(const Ctx& ctx) {
  const auto& v = ctx.attr_ints("padding");
  if (v.size() != 1 && v.size() != 2 && v.size() != 4)
    ctx.fail("attr 'padding' must hold 1, 2 or 4 ints, got ", attr_to_string(v));
  for (auto i : v)
    if (i < 0) ctx.fail("attr 'padding' must hold non-negative ints, got ", attr_to_string(v));
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  return {v.front(), v.back(), v.front(), v.back()};
}

// One spatial axis of a sliding window.
struct Window {
  Dim kernel;
  int64_t pad_lo, pad_hi, stride, dilation;
};

// Division rounding down or up, for b > 0, without negating a (which
// overflows at INT64_MIN).
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 && a > 0); }

// len -> floor((len + pad_lo + pad_hi - dilation*(kernel-1) - 1) / stride) + 1,
// with ceil in ceil_mode (less a last window starting in the high padding, as
// in PyTorch). A polynomial when the division is exact (always for stride 1);
// otherwise the dims must be constant.
Dim window_output(const TypeContext& ctx, const char* axis, const Dim& len, const Window& w,
                  bool ceil_mode) {
  Dim span = len + Dim(w.pad_lo) + Dim(w.pad_hi) - Dim(w.dilation) * (w.kernel - Dim(1)) - Dim(1);
  std::optional<Dim> steps = exact_divide(span, Dim(w.stride));
  if (!steps && span.is_const())
    steps = ceil_mode ? ceil_div(span.value(), w.stride) : floor_div(span.value(), w.stride);
  if (!steps)
    ctx.fail("cannot compute the output ", axis, " for input ", axis, " ", len.to_string(),
             " and kernel ", w.kernel.to_string(), " with stride ", w.stride, ": ",
             span.to_string(), " is not provably divisible by ", w.stride,
             " (use constant dims or stride 1)");
  Dim out = *steps + Dim(1);
  Dim overshoot = *steps * Dim(w.stride) - len - Dim(w.pad_lo);
  if (ceil_mode && overshoot.is_const() && overshoot.value() >= 0) out = out - Dim(1);
  if (out.is_const() && out.value() <= 0)
    ctx.fail("output ", axis, " would be ", out.value(), ": input ", axis, " ", len.to_string(),
             ", padding ", w.pad_lo, " + ", w.pad_hi, ", kernel ", w.kernel.to_string(),
             ", dilation ", w.dilation, ", stride ", w.stride);
  return out;
}

// data (N, C, H, W), weight (O, C / groups, KH, KW) -> (N, O, OH, OW)
Shape conv2d_shape(const TypeContext& ctx, const Shape& d, const Shape& w) {
  int64_t groups = ctx.attr_int("groups");
  if (groups <= 0) ctx.fail("attr 'groups' must be positive, got ", groups);
  if (d[1] != w[1] * Dim(groups))
    ctx.fail("data ", shape_to_string(d), " has ", d[1].to_string(), " channels, weight ",
             shape_to_string(w), " with groups=", groups, " expects ",
             (w[1] * Dim(groups)).to_string());
  if (!exact_divide(w[0], Dim(groups)))
    ctx.fail("weight ", shape_to_string(w), " has ", w[0].to_string(),
             " output channels, not divisible by groups=", groups);
  auto strides = positive_pair_attr(ctx, "strides");
  auto dilation = positive_pair_attr(ctx, "dilation");
  auto pad = padding_attr(ctx);
  Dim oh = window_output(ctx, "height", d[2], {w[2], pad[0], pad[2], strides[0], dilation[0]},
                         false);
  Dim ow = window_output(ctx, "width", d[3], {w[3], pad[1], pad[3], strides[1], dilation[1]},
                         false);
  return {d[0], w[0], oh, ow};
}

// data float (N, C, H, W), weight (O, C / groups, KH, KW) -> (N, O, OH, OW)
Type conv2d_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_rank(ctx, 1, 4);
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  return TypeNode::tensor(conv2d_shape(ctx, ctx.tensor(0).shape(), ctx.tensor(1).shape()),
                          ctx.tensor(0).dtype());
}

// x (N, C, H, W), pool_size (KH, KW) -> (N, C, OH, OW)
Shape pool2d_shape(const TypeContext& ctx, const Shape& x) {
  auto size = positive_pair_attr(ctx, "pool_size");
  auto strides = positive_pair_attr(ctx, "strides");
  auto dilation = positive_pair_attr(ctx, "dilation");
  auto pad = padding_attr(ctx);
  bool ceil_mode = ctx.attr_bool("ceil_mode");
  Dim oh = window_output(ctx, "height", x[2], {size[0], pad[0], pad[2], strides[0], dilation[0]},
                         ceil_mode);
  Dim ow = window_output(ctx, "width", x[3], {size[1], pad[1], pad[3], strides[1], dilation[1]},
                         ceil_mode);
  return {x[0], x[1], oh, ow};
}

// x numeric (N, C, H, W) -> (N, C, OH, OW)
Type max_pool2d_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_numeric(ctx, 0);
  return TypeNode::tensor(pool2d_shape(ctx, ctx.tensor(0).shape()), ctx.tensor(0).dtype());
}

// x float (N, C, H, W) -> (N, C, OH, OW)
Type avg_pool2d_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_float(ctx, 0);
  return TypeNode::tensor(pool2d_shape(ctx, ctx.tensor(0).shape()), ctx.tensor(0).dtype());
}

// ---- backward ops ----

// Requires arg 0, output_grad, to have the forward result's shape.
void require_output_grad(const TypeContext& ctx, const Shape& result) {
  const Shape& g = ctx.tensor(0).shape();
  if (g != result)
    ctx.fail("argument 'output_grad' has shape ", shape_to_string(g),
             ", but the forward result has shape ", shape_to_string(result));
}

// output_grad of nll_loss(predictions, targets) -> predictions' type
Type nll_loss_backward_type(const TypeContext& ctx) {
  Shape result = nll_loss_shape(ctx, 1);
  require_same_dtype(ctx, 0, 1);
  require_output_grad(ctx, result);
  return ctx.arg_type(1);
}

// A shape attr of rank 4, (N, C, H, W) or (O, C / groups, KH, KW).
const Shape& rank4_shape_attr(const TypeContext& ctx, const char* name) {
  const Shape& s = ctx.attr_shape(name);
  if (s.size() != 4) ctx.fail("attr '", name, "' must have 4 dims, got ", shape_to_string(s));
  return s;
}

// output_grad, weight (O, C / groups, KH, KW), data_shape -> data_shape
Type conv2d_backward_data_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_rank(ctx, 1, 4);
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  const Shape& d = rank4_shape_attr(ctx, "data_shape");
  require_output_grad(ctx, conv2d_shape(ctx, d, ctx.tensor(1).shape()));
  return TypeNode::tensor(d, ctx.tensor(0).dtype());
}

// output_grad, data (N, C, H, W), weight_shape -> weight_shape
Type conv2d_backward_weight_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_rank(ctx, 1, 4);
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  const Shape& w = rank4_shape_attr(ctx, "weight_shape");
  require_output_grad(ctx, conv2d_shape(ctx, ctx.tensor(1).shape(), w));
  return TypeNode::tensor(w, ctx.tensor(0).dtype());
}

// output_grad of a pool of x float (N, C, H, W) -> x's type
Type pool2d_backward_type(const TypeContext& ctx) {
  require_rank(ctx, 1, 4);
  require_float(ctx, 1);
  require_same_dtype(ctx, 0, 1);
  require_output_grad(ctx, pool2d_shape(ctx, ctx.tensor(1).shape()));
  return ctx.arg_type(1);
}

// ---- FLOP counts ----

// 2 * N * O * OH * OW * (C / groups) * KH * KW: a multiply-add per weight tap.
Dim conv2d_flops(const CallNode& call) {
  const Shape& w = call.args()[1]->type()->shape();
  return Dim(2) * num_elements(call.type()->shape()) * w[1] * w[2] * w[3];
}

// N * C * OH * OW * KH * KW: one compare or add per window tap.
Dim pool2d_flops(const CallNode& call) {
  int i = call.op().attr_index("pool_size");
  const auto& size = std::get<std::vector<int64_t>>(call.attrs()[i]);
  return num_elements(call.type()->shape()) * Dim(size.front()) * Dim(size.back());
}

// Two per target: the negated gather and the accumulation.
Dim nll_loss_flops(const CallNode& call) {
  return Dim(2) * num_elements(call.args()[1]->type()->shape());
}

// One per target: the scaled scatter.
Dim nll_loss_backward_flops(const CallNode& call) {
  return num_elements(call.args()[2]->type()->shape());
}

// As conv2d: a multiply-add per weight tap and output_grad element. The
// weight's shape is arg 1's (backward_data) or the weight_shape attr.
Dim conv2d_backward_data_flops(const CallNode& call) {
  const Shape& w = call.args()[1]->type()->shape();
  return Dim(2) * num_elements(call.args()[0]->type()->shape()) * w[1] * w[2] * w[3];
}

Dim conv2d_backward_weight_flops(const CallNode& call) {
  const Shape& w = call.type()->shape();
  return Dim(2) * num_elements(call.args()[0]->type()->shape()) * w[1] * w[2] * w[3];
}

// N * C * OH * OW * KH * KW: one add per window tap and output_grad element.
Dim pool2d_backward_flops(const CallNode& call) {
  int i = call.op().attr_index("pool_size");
  const auto& size = std::get<std::vector<int64_t>>(call.attrs()[i]);
  return num_elements(call.args()[0]->type()->shape()) * Dim(size.front()) * Dim(size.back());
}

// ---- kernels: softmax, log_softmax ----

template <typename T> constexpr T kInf = std::numeric_limits<T>::infinity();

template <typename To, typename From>
To bit_cast(From v) {
  To to;
  std::memcpy(&to, &v, sizeof to);
  return to;
}

// exp(x) for x <= 0 (softmax's x - max) or NaN, branch-free so loops over it
// vectorize (glibc's expf does not): Cephes' expf, n = round(x / ln 2) and a
// degree-6 polynomial for exp(x - n ln 2), within 2 ulp; results below
// FLT_MIN (x < -87.34, -inf included) flush to 0. Selects are bit masks, as
// a select on floats would keep GCC from vectorizing.
inline float exp_nonpositive(float x) {
  constexpr int32_t kLoBits = -1028740016;  // bits of -87.3365402f = ln(FLT_MIN)
  int32_t b = bit_cast<int32_t>(x);
  int32_t nan = -static_cast<int32_t>((b & 0x7fffffff) > 0x7f800000);
  int32_t flush = nan | -static_cast<int32_t>((b < 0) & (b > kLoBits));  // x < ln(FLT_MIN)
  float xs = bit_cast<float>((b & ~flush) | (kLoBits & flush));
  float t = xs * 1.44269504088896341f + 12582912.0f;  // + 1.5 * 2^23 rounds to n
  int32_t n = bit_cast<int32_t>(t) - 0x4b400000;
  float nf = t - 12582912.0f;
  float r = (xs - nf * 0.693359375f) - nf * -2.12194440e-4f;  // x - n ln 2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = (p * r * r + r + 1.0f) * bit_cast<float>((n + 127) << 23);
  return bit_cast<float>((bit_cast<int32_t>(y) & ~flush) | (b & nan));
}

inline double exp_nonpositive(double x) { return std::exp(x); }

// NaN-propagating max of x[0, n) (-inf when empty).
template <typename T>
T row_max(const T* x, int64_t n) {
  return lane_reduce(x, n, -kInf<T>, [](T a, T b) { return nan_max(a, b); });
}

// e[i] = exp(x[i] - m) for the row x[0, n); returns their sum.
template <typename T>
T exp_shifted(const T* x, int64_t n, T m, T* e) {
  for (int64_t i = 0; i < n; ++i) e[i] = exp_nonpositive(x[i] - m);
  return pairwise_sum(0, n, [e](int64_t i) { return e[i]; });
}

// softmax (kLog false) or log_softmax of the contiguous rows x (rows, n) into y.
template <typename T, bool kLog>
AJ_MULTIVERSION void softmax_rows(const T* x, T* y, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    T m = row_max(x, n);
    T sum = exp_shifted(x, n, m, y);
    if constexpr (kLog) {
      T log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
    } else {
      T inv = T(1) / sum;
      for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    }
  }
}

// softmax or log_softmax of x (n, inner) along its first axis into y, all
// inner columns at once; m and s are scratch of `inner` elements.
template <typename T, bool kLog>
AJ_MULTIVERSION void softmax_columns(const T* x, T* y, int64_t n, int64_t inner, T* m, T* s) {
  std::fill(m, m + inner, -kInf<T>);
  std::fill(s, s + inner, T(0));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < inner; ++k) m[k] = nan_max(m[k], x[j * inner + k]);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < inner; ++k) {
      y[j * inner + k] = exp_nonpositive(x[j * inner + k] - m[k]);
      s[k] += y[j * inner + k];
    }
  for (int64_t k = 0; k < inner; ++k) s[k] = kLog ? std::log(s[k]) : T(1) / s[k];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < inner; ++k) {
      if constexpr (kLog) y[j * inner + k] = (x[j * inner + k] - m[k]) - s[k];
      else y[j * inner + k] *= s[k];
    }
}

// A contiguous shape viewed as (outer, n, inner) around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const std::vector<int64_t>& shape, int64_t axis) {
  AxisView v;
  auto ndim = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += ndim;
  for (int64_t d = 0; d < ndim; ++d) (d < axis ? v.outer : d == axis ? v.n : v.inner) *= shape[d];
  return v;
}

template <bool kLog>
void softmax_kernel(KernelContext& ctx) {
  AxisView v = axis_view(ctx.in(0).shape(), ctx.attr_int("axis"));
  dispatch_float(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = ctx.in(0).data_as<T>();
    T* y = ctx.out().data_as<T>();
    int64_t block = v.n * v.inner;
    if (v.inner == 1) return softmax_rows<T, kLog>(x, y, v.outer, v.n);
    std::vector<T> scratch(2 * v.inner);
    for (int64_t o = 0; o < v.outer; ++o)
      softmax_columns<T, kLog>(x + o * block, y + o * block, v.n, v.inner, scratch.data(),
                               scratch.data() + v.inner);
  });
}

// ---- kernels: layer_norm ----

// layer_norm's normalized dims of x: a mask, the strides over x's shape at
// which gamma and beta (x's dims at `axes`, in that order) are read, the
// number of elements normalized together, and whether the axes are x's
// trailing dims in order (then gamma and beta line up with each row).
struct NormAxes {
  std::vector<bool> mask;
  std::vector<int64_t> param_strides;
  int64_t size = 1;
  bool trailing = true;
};

NormAxes norm_axes(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  auto ndim = static_cast<int64_t>(shape.size());
  auto count = static_cast<int64_t>(axes.size());
  NormAxes a;
  a.mask.assign(ndim, false);
  a.param_strides.assign(ndim, 0);
  std::vector<int64_t> dims, param_shape;
  for (auto ax : axes) dims.push_back(ax < 0 ? ax + ndim : ax);
  for (auto d : dims) param_shape.push_back(shape[d]);
  auto strides = contiguous_strides(param_shape);
  for (int64_t k = 0; k < count; ++k) {
    a.mask[dims[k]] = true;
    a.param_strides[dims[k]] = strides[k];
    a.size *= shape[dims[k]];
    a.trailing = a.trailing && dims[k] == ndim - count + k;
  }
  return a;
}

// Normalizes each contiguous row of x (rows, n) into y, then scales by g and
// shifts by b (both n long).
template <typename T>
AJ_MULTIVERSION void layer_norm_rows(const T* x, const T* g, const T* b, T* y, int64_t rows,
                                     int64_t n, T eps) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n) {
    T mean = pairwise_sum(0, n, [x](int64_t i) { return x[i]; }) / static_cast<T>(n);
    T var = pairwise_sum(0, n, [x, mean](int64_t i) { return (x[i] - mean) * (x[i] - mean); }) /
            static_cast<T>(n);
    T rstd = T(1) / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * g[i] + b[i];
  }
}

// layer_norm over any axes: per-group mean and 1/std by two strided
// reduction passes, then one pass writing y.
template <typename T>
void layer_norm_strided(const NDArray& x, const T* g, const T* b, T* y, const NormAxes& a, T eps) {
  const auto& shape = x.shape();
  const T* px = x.data_as<T>();
  auto n = static_cast<T>(a.size);
  std::vector<T> mean(x.numel() / a.size, T(0)), rstd(mean.size(), T(0));
  reduction_runs(
      shape, a.mask,
      [&](int64_t o, int64_t i, int64_t len) { mean[o] += pairwise_sum(i, len, [px](int64_t j) { return px[j]; }); },
      [&](int64_t o, int64_t i, int64_t len) {
        for (int64_t k = 0; k < len; ++k) mean[o + k] += px[i + k];
      });
  for (auto& m : mean) m /= n;
  reduction_runs(
      shape, a.mask,
      [&](int64_t o, int64_t i, int64_t len) {
        T m = mean[o];
        rstd[o] += pairwise_sum(i, len, [px, m](int64_t j) { return (px[j] - m) * (px[j] - m); });
      },
      [&](int64_t o, int64_t i, int64_t len) {
        for (int64_t k = 0; k < len; ++k) rstd[o + k] += (px[i + k] - mean[o + k]) * (px[i + k] - mean[o + k]);
      });
  for (auto& r : rstd) r = T(1) / std::sqrt(r / n + eps);
  strided_loop<3>(shape, {contiguous_strides(shape), kept_strides(shape, a.mask), a.param_strides},
                  [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& s) {
                    for (int64_t k = 0; k < len; ++k) {
                      int64_t i = off[0] + k * s[0], r = off[1] + k * s[1], p = off[2] + k * s[2];
                      y[i] = (px[i] - mean[r]) * rstd[r] * g[p] + b[p];
                    }
                  });
}

void layer_norm_kernel(KernelContext& ctx) {
  const NDArray& x = ctx.in(0);
  if (x.numel() == 0) return;
  NormAxes a = norm_axes(x.shape(), ctx.attr_ints("axes"));
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = ctx.in(1).data_as<T>();
    const T* b = ctx.in(2).data_as<T>();
    T* y = ctx.out().data_as<T>();
    auto eps = static_cast<T>(ctx.attr_float("epsilon"));
    if (!a.trailing) return layer_norm_strided(x, g, b, y, a, eps);
    layer_norm_rows(x.data_as<T>(), g, b, y, x.numel() / a.size, a.size, eps);
  });
}

// ---- kernels: losses ----

// Rows and classes of a loss's (n, c) or (c,) input.
std::pair<int64_t, int64_t> rows_and_classes(const NDArray& a) {
  const auto& s = a.shape();
  return {s.size() == 2 ? s[0] : 1, s.back()};
}

// -sum(labels * log_softmax(logits)) of one row; scratch holds c elements.
template <typename T>
T cross_entropy_row(const T* logits, const T* labels, int64_t c, T* scratch) {
  T m = row_max(logits, c);
  T log_sum = std::log(exp_shifted(logits, c, m, scratch));
  return -pairwise_sum(0, c, [=](int64_t i) { return labels[i] * ((logits[i] - m) - log_sum); });
}

// The mean over rows (NaN for none), accumulated in double.
void cross_entropy_kernel(KernelContext& ctx) {
  auto [rows, c] = rows_and_classes(ctx.in(0));
  dispatch_float(ctx.in(0).dtype(), [&, rows = rows, c = c](auto tag) {
    using T = typename decltype(tag)::type;
    const T* logits = ctx.in(0).data_as<T>();
    const T* labels = ctx.in(1).data_as<T>();
    std::vector<T> scratch(c);
    double total = 0;
    for (int64_t r = 0; r < rows; ++r)
      total += cross_entropy_row(logits + r * c, labels + r * c, c, scratch.data());
    ctx.out().data_as<T>()[0] = static_cast<T>(total / static_cast<double>(rows));
  });
}

// Whether row r counts (its target t is not ignore_index); fails when a
// counted target is out of [0, c).
bool counted_target(const KernelContext& ctx, int64_t t, int64_t r, int64_t c, int64_t ignore) {
  if (t == ignore) return false;
  if (t < 0 || t >= c)
    ctx.fail("target ", t, " at index ", r, " is out of range [0, ", c, ") (ignore_index is ",
             ignore, ")");
  return true;
}

// What both nll_loss kernels read: (rows, classes) of the predictions, the
// targets, and the reduction and ignore_index attrs.
template <typename I>
struct NllTargets {
  NllTargets(const KernelContext& ctx, int predictions, int targets)
      : ctx(ctx), targets(ctx.in(targets).data_as<I>()), reduction(nll_reduction(ctx)),
        ignore(ctx.attr_int("ignore_index")) {
    std::tie(rows, c) = rows_and_classes(ctx.in(predictions));
  }
  // The target of row r, or -1 when it is ignore_index; fails when out of range.
  int64_t at(int64_t r) const {
    auto t = static_cast<int64_t>(targets[r]);
    return counted_target(ctx, t, r, c, ignore) ? t : -1;
  }

  const KernelContext& ctx;
  const I* targets;
  NllReduction reduction;
  int64_t ignore;
  int64_t rows = 0, c = 0;
};

// -predictions[r, targets[r]] per row, 0 where the target is ignore_index;
// reduction=mean divides the sum by the number of targets not ignored (NaN
// when all are ignored).
template <typename T, typename I>
void nll_loss_typed(const KernelContext& ctx) {
  NllTargets<I> nll(ctx, 0, 1);
  const T* pred = ctx.in(0).data_as<T>();
  T* out = ctx.out().data_as<T>();
  double total = 0;
  int64_t counted = 0;
  for (int64_t r = 0; r < nll.rows; ++r) {
    int64_t t = nll.at(r);
    T loss = t < 0 ? T(0) : -pred[r * nll.c + t];
    counted += t >= 0;
    if (nll.reduction == NllReduction::kNone) out[r] = loss;
    else total += loss;
  }
  if (nll.reduction == NllReduction::kSum) out[0] = static_cast<T>(total);
  if (nll.reduction == NllReduction::kMean) out[0] = static_cast<T>(total / static_cast<double>(counted));
}

// d predictions: zeros but -output_grad[r] (or the scalar output_grad, over
// the count of targets not ignored for reduction=mean) at (r, targets[r]) of each
// counted row.
template <typename T, typename I>
void nll_loss_backward_typed(const KernelContext& ctx) {
  NllTargets<I> nll(ctx, 1, 2);
  const T* g = ctx.in(0).data_as<T>();
  T* out = ctx.out().data_as<T>();
  std::fill(out, out + ctx.out().numel(), T(0));
  int64_t counted = 0;
  for (int64_t r = 0; r < nll.rows; ++r) counted += nll.at(r) >= 0;
  T scale = nll.reduction == NllReduction::kMean ? T(1) / static_cast<T>(counted) : T(1);
  for (int64_t r = 0; r < nll.rows; ++r) {
    int64_t t = nll.at(r);
    if (t >= 0) out[r * nll.c + t] = -(nll.reduction == NllReduction::kNone ? g[r] : g[0]) * scale;
  }
}

// f(T{}, I{}) for float values of `value` and targets of `index` (int32 or int64).
template <typename F>
void dispatch_float_and_index(DType value, DType index, F&& f) {
  dispatch_float(value, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (index == DType::kInt32) f(T{}, int32_t{});
    else f(T{}, int64_t{});
  });
}

void nll_loss_kernel(KernelContext& ctx) {
  dispatch_float_and_index(ctx.in(0).dtype(), ctx.in(1).dtype(), [&](auto t, auto i) {
    nll_loss_typed<decltype(t), decltype(i)>(ctx);
  });
}

void nll_loss_backward_kernel(KernelContext& ctx) {
  dispatch_float_and_index(ctx.in(1).dtype(), ctx.in(2).dtype(), [&](auto t, auto i) {
    nll_loss_backward_typed<decltype(t), decltype(i)>(ctx);
  });
}

// ---- kernels: sliding windows ----

// A window as the kernels read it: size, strides and dilation as (h, w),
// padding as (top, left, bottom, right).
struct Window2d {
  std::array<int64_t, 2> size, stride, dilation;
  std::array<int64_t, 4> pad;
};

Window2d window_2d(const KernelContext& ctx, std::array<int64_t, 2> size) {
  return {size, positive_pair_attr(ctx, "strides"), positive_pair_attr(ctx, "dilation"),
          padding_attr(ctx)};
}

// The k in [lo, hi) within [0, count) for which 0 <= start + k * step < len.
struct Range {
  int64_t lo, hi;
};

// In 128 bits: a stride or dilation near 2**63 (a 1x1 window may have any
// dilation) overflowed the rounding up in 64, and the kernels then wrote
// before their rows or read the wrong taps.
Range valid_range(int64_t start, int64_t step, int64_t len, int64_t count) {
  using Wide = __int128;
  Wide lo = start >= 0 ? 0 : (-Wide(start) + step - 1) / step;
  Wide hi = len > start ? std::min<Wide>(count, (Wide(len) - start + step - 1) / step) : 0;
  return {static_cast<int64_t>(std::min(lo, hi)), static_cast<int64_t>(hi)};
}

// Unfolds one group's channels of an image, (cg, h, w), into col
// (cg * kh * kw, oh * ow): row (c, i, j) holds, for each output pixel, the
// input under tap (i, j) of channel c, 0 in the padding.
template <typename T>
void im2col(const T* image, int64_t cg, int64_t h, int64_t w, const Window2d& win, int64_t oh,
            int64_t ow, T* col) {
  auto [kh, kw] = win.size;
  auto [sh, sw] = win.stride;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        T* row = col + ((c * kh + i) * kw + j) * oh * ow;
        int64_t left = j * win.dilation[1] - win.pad[1];
        Range cols = valid_range(left, sw, w, ow);
        for (int64_t y = 0; y < oh; ++y) {
          T* r = row + y * ow;
          int64_t ih = y * sh + i * win.dilation[0] - win.pad[0];
          if (ih < 0 || ih >= h) {
            std::fill(r, r + ow, T(0));
            continue;
          }
          const T* src = image + (c * h + ih) * w;
          std::fill(r, r + cols.lo, T(0));
          for (int64_t x = cols.lo; x < cols.hi; ++x) r[x] = src[x * sw + left];
          std::fill(r + cols.hi, r + ow, T(0));
        }
      }
}

// Folds col (cg * kh * kw, oh * ow) back onto an image (cg, h, w), adding
// each entry into the input pixel under its tap: the transpose of im2col
// (entries that fall in the padding are dropped).
template <typename T>
void col2im(const T* col, int64_t cg, int64_t h, int64_t w, const Window2d& win, int64_t oh,
            int64_t ow, T* image) {
  auto [kh, kw] = win.size;
  auto [sh, sw] = win.stride;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const T* row = col + ((c * kh + i) * kw + j) * oh * ow;
        int64_t left = j * win.dilation[1] - win.pad[1];
        Range cols = valid_range(left, sw, w, ow);
        for (int64_t y = 0; y < oh; ++y) {
          int64_t ih = y * sh + i * win.dilation[0] - win.pad[0];
          if (ih < 0 || ih >= h) continue;
          const T* r = row + y * ow;
          T* dst = image + (c * h + ih) * w;
          for (int64_t x = cols.lo; x < cols.hi; ++x) dst[x * sw + left] += r[x];
        }
      }
}

// conv2d's sizes from its data (N, C, H, W) and output (N, O, OH, OW)
// shapes: per group, cg input and og output channels and k = cg * KH * KW
// rows of im2col.
struct ConvDims {
  int64_t batch, groups, cg, og, k, h, w, oh, ow, pixels, plane;
  bool direct;  // a 1x1 window with unit strides and no padding: an image is its own im2col
};

ConvDims conv_dims(const KernelContext& ctx, const std::vector<int64_t>& data,
                   const std::vector<int64_t>& out, const Window2d& win) {
  ConvDims c;
  c.batch = data[0];
  c.groups = ctx.attr_int("groups");
  c.cg = data[1] / c.groups;
  c.og = out[1] / c.groups;
  c.k = c.cg * win.size[0] * win.size[1];
  c.h = data[2], c.w = data[3], c.oh = out[2], c.ow = out[3];
  c.pixels = c.oh * c.ow;
  c.plane = c.h * c.w;
  c.direct = win.size == std::array<int64_t, 2>{1, 1} && win.stride == std::array<int64_t, 2>{1, 1} &&
             win.pad == std::array<int64_t, 4>{0, 0, 0, 0};
  return c;
}

// One GEMM per (image, group): weights (og, k) x im2col (k, pixels).
template <typename T>
void conv2d_typed(const KernelContext& ctx, const Window2d& win) {
  ConvDims c = conv_dims(ctx, ctx.in(0).shape(), ctx.out().shape(), win);
  const T* data = ctx.in(0).data_as<T>();
  const T* weight = ctx.in(1).data_as<T>();
  T* out = ctx.out().data_as<T>();
  if (ctx.out().numel() == 0) return;
  if (c.k == 0) return std::fill(out, out + ctx.out().numel(), T(0));
  std::vector<T> col(c.direct ? 0 : c.k * c.pixels);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t g = 0; g < c.groups; ++g) {
      const T* image = data + (n * c.groups + g) * c.cg * c.plane;
      if (!c.direct) im2col(image, c.cg, c.h, c.w, win, c.oh, c.ow, col.data());
      blas::gemm(false, false, c.og, c.pixels, c.k, weight + g * c.og * c.k, c.k, c.direct ? image : col.data(),
                 c.pixels, T(0), out + (n * c.groups + g) * c.og * c.pixels, c.pixels);
    }
}

// d data: per (image, group), T(weights) (k, og) x output_grad (og, pixels),
// folded back onto the image by col2im.
template <typename T>
void conv2d_backward_data_typed(const KernelContext& ctx, const Window2d& win) {
  ConvDims c = conv_dims(ctx, ctx.out().shape(), ctx.in(0).shape(), win);
  const T* grad = ctx.in(0).data_as<T>();
  const T* weight = ctx.in(1).data_as<T>();
  T* out = ctx.out().data_as<T>();
  std::fill(out, out + ctx.out().numel(), T(0));
  if (c.k == 0 || c.og == 0 || c.pixels == 0) return;
  std::vector<T> col(c.direct ? 0 : c.k * c.pixels);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t g = 0; g < c.groups; ++g) {
      T* image = out + (n * c.groups + g) * c.cg * c.plane;
      blas::gemm(true, false, c.k, c.pixels, c.og, weight + g * c.og * c.k, c.k,
                 grad + (n * c.groups + g) * c.og * c.pixels, c.pixels, T(0), c.direct ? image : col.data(), c.pixels);
      if (!c.direct) col2im(col.data(), c.cg, c.h, c.w, win, c.oh, c.ow, image);
    }
}

// d weight: per (image, group), weights (og, k) += output_grad (og, pixels)
// x T(im2col) (pixels, k).
template <typename T>
void conv2d_backward_weight_typed(const KernelContext& ctx, const Window2d& win) {
  ConvDims c = conv_dims(ctx, ctx.in(1).shape(), ctx.in(0).shape(), win);
  const T* grad = ctx.in(0).data_as<T>();
  const T* data = ctx.in(1).data_as<T>();
  T* out = ctx.out().data_as<T>();
  std::fill(out, out + ctx.out().numel(), T(0));
  if (c.k == 0 || c.og == 0 || c.pixels == 0) return;
  std::vector<T> col(c.direct ? 0 : c.k * c.pixels);
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t g = 0; g < c.groups; ++g) {
      const T* image = data + (n * c.groups + g) * c.cg * c.plane;
      if (!c.direct) im2col(image, c.cg, c.h, c.w, win, c.oh, c.ow, col.data());
      blas::gemm(false, true, c.og, c.k, c.pixels, grad + (n * c.groups + g) * c.og * c.pixels, c.pixels,
                 c.direct ? image : col.data(), c.pixels, T(1), out + g * c.og * c.k, c.k);
    }
}

void conv2d_kernel(KernelContext& ctx) {
  const auto& ws = ctx.in(1).shape();
  Window2d win = window_2d(ctx, {ws[2], ws[3]});
  dispatch_float(ctx.in(0).dtype(), [&](auto tag) { conv2d_typed<typename decltype(tag)::type>(ctx, win); });
}

void conv2d_backward_data_kernel(KernelContext& ctx) {
  const auto& ws = ctx.in(1).shape();
  Window2d win = window_2d(ctx, {ws[2], ws[3]});
  dispatch_float(ctx.in(0).dtype(),
                 [&](auto tag) { conv2d_backward_data_typed<typename decltype(tag)::type>(ctx, win); });
}

void conv2d_backward_weight_kernel(KernelContext& ctx) {
  const auto& ws = ctx.out().shape();
  Window2d win = window_2d(ctx, {ws[2], ws[3]});
  dispatch_float(ctx.in(0).dtype(),
                 [&](auto tag) { conv2d_backward_weight_typed<typename decltype(tag)::type>(ctx, win); });
}

// A pool's window at one output pixel: where it starts in the input (top,
// left) and the ranges of its taps inside the input.
struct PoolWindow {
  int64_t top, left;
  Range rows, cols;
};

// Calls visit(p, o, window) for each output pixel o (row-major over oh * ow)
// of each of `planes` input planes (h, w).
template <typename Visit>
void for_each_window(int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow, const Window2d& win,
                     Visit&& visit) {
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y) {
      int64_t top = y * win.stride[0] - win.pad[0];
      Range rows = valid_range(top, win.dilation[0], h, win.size[0]);
      for (int64_t c = 0; c < ow; ++c) {
        int64_t left = c * win.stride[1] - win.pad[1];
        visit(p, y * ow + c, PoolWindow{top, left, rows, valid_range(left, win.dilation[1], w, win.size[1])});
      }
    }
}

// Calls tap(i) with the offset i in its (h, w) plane of each tap of the window.
template <typename Tap>
void for_each_tap(const PoolWindow& pw, const Window2d& win, int64_t w, Tap&& tap) {
  for (int64_t i = pw.rows.lo; i < pw.rows.hi; ++i)
    for (int64_t j = pw.cols.lo; j < pw.cols.hi; ++j)
      tap((pw.top + i * win.dilation[0]) * w + pw.left + j * win.dilation[1]);
}

// A pool over x (N, C, H, W) into out (N, C, OH, OW): each output pixel is
// value(plane of x, window).
template <typename T, typename Value>
void pool2d(const NDArray& x, NDArray& out, const Window2d& win, Value&& value) {
  const auto& xs = x.shape();
  const auto& os = out.shape();
  int64_t h = xs[2], w = xs[3], pixels = os[2] * os[3];
  const T* px = x.data_as<T>();
  T* po = out.data_as<T>();
  for_each_window(xs[0] * xs[1], h, w, os[2], os[3], win, [&](int64_t p, int64_t o, const PoolWindow& pw) {
    po[p * pixels + o] = value(px + p * h * w, pw);
  });
}

void max_pool2d_kernel(KernelContext& ctx) {
  Window2d win = window_2d(ctx, positive_pair_attr(ctx, "pool_size"));
  int64_t w = ctx.in(0).shape()[3];
  dispatch_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Lim = std::numeric_limits<T>;
    pool2d<T>(ctx.in(0), ctx.out(), win, [&](const T* plane, const PoolWindow& pw) {
      T m = Lim::has_infinity ? -Lim::infinity() : Lim::lowest();
      for_each_tap(pw, win, w, [&](int64_t i) { m = nan_max(m, plane[i]); });
      return m;
    });
  });
}

// avg_pool2d's divisor: the window's taps inside the input, or with
// count_include_pad inside the padded input (as PyTorch, taps past the
// padding never count). A double: a window of padding may hold more than
// 2**63 taps.
double avg_divisor(const PoolWindow& pw, const Window2d& win, int64_t h, int64_t w, bool include_pad) {
  Range rows = pw.rows, cols = pw.cols;
  if (include_pad) {
    auto [pt, pl, pb, pr] = win.pad;
    rows = valid_range(pw.top + pt, win.dilation[0], h + pt + pb, win.size[0]);
    cols = valid_range(pw.left + pl, win.dilation[1], w + pl + pr, win.size[1]);
  }
  return static_cast<double>(rows.hi - rows.lo) * static_cast<double>(cols.hi - cols.lo);
}

void avg_pool2d_kernel(KernelContext& ctx) {
  Window2d win = window_2d(ctx, positive_pair_attr(ctx, "pool_size"));
  bool include_pad = ctx.attr_bool("count_include_pad");
  int64_t h = ctx.in(0).shape()[2], w = ctx.in(0).shape()[3];
  dispatch_float(ctx.in(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool2d<T>(ctx.in(0), ctx.out(), win, [&](const T* plane, const PoolWindow& pw) {
      T sum = 0;
      for_each_tap(pw, win, w, [&](int64_t i) { sum += plane[i]; });
      return sum / static_cast<T>(avg_divisor(pw, win, h, w, include_pad));
    });
  });
}

// d x of a pool: zeros, then share(g, plane of x, plane of d x, window) for
// each output_grad element g.
template <typename T, typename Share>
void pool2d_backward(const KernelContext& ctx, const Window2d& win, Share&& share) {
  const auto& xs = ctx.in(1).shape();
  const auto& gs = ctx.in(0).shape();
  int64_t plane = xs[2] * xs[3], pixels = gs[2] * gs[3];
  const T* g = ctx.in(0).data_as<T>();
  const T* x = ctx.in(1).data_as<T>();
  T* dx = ctx.out().data_as<T>();
  std::fill(dx, dx + ctx.out().numel(), T(0));
  for_each_window(xs[0] * xs[1], xs[2], xs[3], gs[2], gs[3], win, [&](int64_t p, int64_t o, const PoolWindow& pw) {
    share(g[p * pixels + o], x + p * plane, dx + p * plane, pw);
  });
}

// Each output_grad element goes to its window's first maximal tap (the first
// NaN, if any), as in PyTorch.
void max_pool2d_backward_kernel(KernelContext& ctx) {
  Window2d win = window_2d(ctx, positive_pair_attr(ctx, "pool_size"));
  int64_t w = ctx.in(1).shape()[3];
  dispatch_float(ctx.in(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool2d_backward<T>(ctx, win, [&](T g, const T* x, T* dx, const PoolWindow& pw) {
      int64_t best = -1;
      for_each_tap(pw, win, w, [&](int64_t i) {
        if (best < 0 || !(x[best] >= x[i] || x[best] != x[best])) best = i;
      });
      if (best >= 0) dx[best] += g;
    });
  });
}

// Each output_grad element is spread evenly over the taps its divisor counts.
void avg_pool2d_backward_kernel(KernelContext& ctx) {
  Window2d win = window_2d(ctx, positive_pair_attr(ctx, "pool_size"));
  bool include_pad = ctx.attr_bool("count_include_pad");
  int64_t h = ctx.in(1).shape()[2], w = ctx.in(1).shape()[3];
  dispatch_float(ctx.in(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool2d_backward<T>(ctx, win, [&](T g, const T*, T* dx, const PoolWindow& pw) {
      T share = g / static_cast<T>(avg_divisor(pw, win, h, w, include_pad));
      for_each_tap(pw, win, w, [&](int64_t i) { dx[i] += share; });
    });
  });
}

// ---- VJPs ----

// softmax: y * (g - sum(g * y, axis, keepdims))
std::vector<Expr> softmax_vjp(VJPContext& ctx) {
  const Expr& y = ctx.result;
  KwAttrs axis = {{"axis", std::vector<int64_t>{ctx.attr_int("axis")}}, {"keepdims", true}};
  Expr dot = ctx.make(ops::sum, {ctx.make(ops::multiply, {ctx.grad, y})}, axis);
  return {ctx.make(ops::multiply, {y, ctx.make(ops::subtract, {ctx.grad, dot})})};
}

// log_softmax: g - exp(y) * sum(g, axis, keepdims)
std::vector<Expr> log_softmax_vjp(VJPContext& ctx) {
  KwAttrs axis = {{"axis", std::vector<int64_t>{ctx.attr_int("axis")}}, {"keepdims", true}};
  Expr total = ctx.make(ops::sum, {ctx.grad}, axis);
  return {ctx.make(ops::subtract, {ctx.grad, ctx.make(ops::multiply, {ctx.make(ops::exp, {ctx.result}), total})})};
}

// layer_norm's axes in the adjoint: `norm` ascending (the order of x's dims),
// `kept` the rest, and the permutation taking gamma's dims (x's dims at
// `axes`, in the order given) to ascending order.
struct NormLayout {
  std::vector<int64_t> norm, kept, to_sorted;
};

NormLayout norm_layout(const VJPContext& ctx) {
  auto n = static_cast<int64_t>(ctx.arg_type(0).ndim());
  std::vector<int64_t> axes = wrap_axes(ctx.attr_ints("axes"), n);
  NormLayout l;
  for (size_t k = 0; k < axes.size(); ++k) l.to_sorted.push_back(static_cast<int64_t>(k));
  std::sort(l.to_sorted.begin(), l.to_sorted.end(), [&](int64_t a, int64_t b) { return axes[a] < axes[b]; });
  for (auto k : l.to_sorted) l.norm.push_back(axes[k]);
  l.kept = other_axes(l.norm, n);
  return l;
}

// gamma made to broadcast against x: its dims put in x's order, then unit
// dims added where kept axes lie between or after them.
Expr broadcast_param(VJPContext& ctx, const NormLayout& l, const Expr& gamma) {
  Expr e = is_identity_permutation(l.to_sorted) ? gamma : make_permute_dims(gamma, l.to_sorted);
  const Shape& xs = ctx.arg_type(0).shape();
  int64_t first = l.norm.front();
  bool trailing = l.norm.back() - first + 1 == static_cast<int64_t>(l.norm.size()) &&
                  l.norm.back() == static_cast<int64_t>(xs.size()) - 1;
  if (trailing) return e;
  Shape shape(xs.begin() + first, xs.end());
  for (auto a : l.kept)
    if (a > first) shape[a - first] = Dim(1);
  return ctx.make(ops::reshape, {e}, {{"shape", shape}});
}

// e (x's shape) summed over the kept axes into gamma's shape and dim order.
Expr reduce_to_param(VJPContext& ctx, const NormLayout& l, const Expr& e) {
  Expr t = l.kept.empty() ? e : ctx.make(ops::sum, {e}, {{"axis", l.kept}});
  if (is_identity_permutation(l.to_sorted)) return t;
  return make_permute_dims(t, inverse_permutation(l.to_sorted));
}

// layer_norm, with xhat = (x - mean) * rstd recomputed, gg = g * gamma and
// means over the normalized axes:
//   dx = rstd * (gg - mean(gg) - xhat * mean(gg * xhat))
//   dgamma = sum(g * xhat), dbeta = sum(g) over the other axes
std::vector<Expr> layer_norm_vjp(VJPContext& ctx) {
  NormLayout l = norm_layout(ctx);
  DType dtype = ctx.arg_type(0).dtype();
  KwAttrs over = {{"axis", l.norm}, {"keepdims", true}};
  const Expr& x = ctx.arg(0);
  Expr var = ctx.make(ops::variance, {x}, over);
  Var rstd = ctx.emit(ops::rsqrt, {ctx.make(ops::add, {var, ctx.scalar(ctx.attr_float("epsilon"), dtype)})});
  Expr centered = ctx.make(ops::subtract, {x, ctx.make(ops::mean, {x}, over)});
  Var xhat = ctx.emit(ops::multiply, {centered, rstd});
  Var gg = ctx.emit(ops::multiply, {ctx.grad, broadcast_param(ctx, l, ctx.arg(1))});
  Expr proj = ctx.make(ops::multiply, {xhat, ctx.make(ops::mean, {ctx.make(ops::multiply, {gg, xhat})}, over)});
  Expr inner = ctx.make(ops::subtract, {ctx.make(ops::subtract, {gg, ctx.make(ops::mean, {gg}, over)}), proj});
  return {ctx.make(ops::multiply, {rstd, inner}),
          reduce_to_param(ctx, l, ctx.make(ops::multiply, {ctx.grad, xhat})),
          reduce_to_param(ctx, l, ctx.grad)};
}

// cross_entropy_with_logits, s = g (rank 1) or g / rows (rank 2):
// dlogits = s * (softmax(logits) * sum(labels, -1) - labels),
// dlabels = -s * log_softmax(logits)
std::vector<Expr> cross_entropy_vjp(VJPContext& ctx) {
  const TypeNode& logits = ctx.arg_type(0);
  Expr s = ctx.grad;
  if (logits.ndim() == 2)
    s = ctx.emit(ops::multiply, {s, count_fraction(ctx, 1.0, {logits.shape()[0]}, logits.dtype())});
  Var lsm = ctx.emit(ops::log_softmax, {ctx.arg(0)}, {{"axis", int64_t{-1}}});
  Expr mass = ctx.make(ops::sum, {ctx.arg(1)}, {{"axis", std::vector<int64_t>{-1}}, {"keepdims", true}});
  Expr diff = ctx.make(ops::subtract, {ctx.make(ops::multiply, {ctx.make(ops::exp, {lsm}), mass}), ctx.arg(1)});
  return {ctx.make(ops::multiply, {s, diff}), ctx.make(ops::multiply, {ctx.make(ops::negative, {s}), lsm})};
}

// nll_loss: (nll_loss_backward(g, predictions, targets), none)
std::vector<Expr> nll_loss_vjp(VJPContext& ctx) {
  KwAttrs attrs = forward_attrs(ctx, {"reduction", "ignore_index"});
  return {ctx.make(ops::nll_loss_backward, {ctx.grad, ctx.arg(0), ctx.arg(1)}, attrs), nullptr};
}

// nll_loss_backward is linear in output_grad, its transpose the loss itself:
// (nll_loss(g, targets), none, none)
std::vector<Expr> nll_loss_backward_vjp(VJPContext& ctx) {
  KwAttrs attrs = forward_attrs(ctx, {"reduction", "ignore_index"});
  return {ctx.make(ops::nll_loss, {ctx.grad, ctx.arg(2)}, attrs), nullptr, nullptr};
}

// The window attrs and groups of a conv2d-family call.
KwAttrs conv_attrs(const VJPContext& ctx) { return forward_attrs(ctx, {"strides", "padding", "dilation", "groups"}); }

// conv2d(data, weight): (conv2d_backward_data(g, weight), conv2d_backward_weight(g, data))
std::vector<Expr> conv2d_vjp(VJPContext& ctx) {
  KwAttrs data = conv_attrs(ctx), weight = data;
  data.emplace_back("data_shape", ctx.arg_type(0).shape());
  weight.emplace_back("weight_shape", ctx.arg_type(1).shape());
  return {ctx.make(ops::conv2d_backward_data, {ctx.grad, ctx.arg(1)}, data),
          ctx.make(ops::conv2d_backward_weight, {ctx.grad, ctx.arg(0)}, weight)};
}

// conv2d_backward_data(G, W) is bilinear, <result, g> = <G, conv2d(g, W)>:
// (conv2d(g, W), conv2d_backward_weight(G, g))
std::vector<Expr> conv2d_backward_data_vjp(VJPContext& ctx) {
  KwAttrs weight = conv_attrs(ctx);
  weight.emplace_back("weight_shape", ctx.arg_type(1).shape());
  return {ctx.make(ops::conv2d, {ctx.grad, ctx.arg(1)}, conv_attrs(ctx)),
          ctx.make(ops::conv2d_backward_weight, {ctx.arg(0), ctx.grad}, weight)};
}

// conv2d_backward_weight(G, X) is bilinear, <result, g> = <G, conv2d(X, g)>:
// (conv2d(X, g), conv2d_backward_data(G, g))
std::vector<Expr> conv2d_backward_weight_vjp(VJPContext& ctx) {
  KwAttrs data = conv_attrs(ctx);
  data.emplace_back("data_shape", ctx.arg_type(1).shape());
  return {ctx.make(ops::conv2d, {ctx.arg(1), ctx.grad}, conv_attrs(ctx)),
          ctx.make(ops::conv2d_backward_data, {ctx.arg(0), ctx.grad}, data)};
}

// max_pool2d: max_pool2d_backward(g, x)
std::vector<Expr> max_pool2d_vjp(VJPContext& ctx) {
  KwAttrs attrs = forward_attrs(ctx, {"pool_size", "strides", "padding", "dilation", "ceil_mode"});
  return {ctx.make(ops::max_pool2d_backward, {ctx.grad, ctx.arg(0)}, attrs)};
}

// The attrs of an avg_pool2d-family call.
KwAttrs avg_pool_attrs(const VJPContext& ctx) {
  return forward_attrs(ctx, {"pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad"});
}

// avg_pool2d: avg_pool2d_backward(g, x)
std::vector<Expr> avg_pool2d_vjp(VJPContext& ctx) {
  return {ctx.make(ops::avg_pool2d_backward, {ctx.grad, ctx.arg(0)}, avg_pool_attrs(ctx))};
}

// avg_pool2d_backward is linear in output_grad and reads only x's shape:
// (avg_pool2d(g), none)
std::vector<Expr> avg_pool2d_backward_vjp(VJPContext& ctx) {
  return {ctx.make(ops::avg_pool2d, {ctx.grad}, avg_pool_attrs(ctx)), nullptr};
}

// The attrs shared by conv2d and the pools, after their required ones.
OpDef& add_window_attrs(OpDef& op) {
  return op
      .add_attr("strides", AttrKind::kIntList, std::vector<int64_t>{1, 1})
      .add_attr("padding", AttrKind::kIntList, std::vector<int64_t>{0, 0})
      .add_attr("dilation", AttrKind::kIntList, std::vector<int64_t>{1, 1});
}

}  // namespace

// FLOPs per element of the first argument: softmax and log_softmax five (max,
// subtract, exp, sum, divide or subtract the log-sum); layer_norm seven (mean,
// center, square, sum, normalize, scale, shift); cross_entropy_with_logits
// seven (log_softmax, then multiply and sum).
//
// The backward ops hold gradients that existing ops cannot express cleanly
// (as TVM's); each has a VJP but max_pool2d_backward, whose gradient for
// output_grad would gather at each window's argmax.
void register_nn_ops(OpRegistry& reg) {
  reg.define(ops::softmax).set_args({"x"})
      .add_attr("axis", AttrKind::kInt, int64_t{-1})
      .set_type_rule(softmax_type).set_flops(per_input_element_flops<5>)
      .set_kernel(softmax_kernel<false>).set_may_fail().set_vjp(softmax_vjp)
      .set_doc(R"doc(exp(x) normalized to sum to 1 along `axis` (default -1), computed as exp(x - max) / sum(exp(x -
max)) so that large inputs do not overflow. NumPy: none
(`m = x.max(axis, keepdims=True); e = np.exp(x - m); e / e.sum(axis, keepdims=True)`, or
`scipy.special.softmax(x, axis)`). PyTorch: `torch.softmax(x, axis)`.

A NaN makes its whole slice NaN. float32 uses a vectorized exp accurate to 2 ulp that flushes
results below FLT_MIN (x - max < -87.34) to 0.

Type: x float; axis in [-x.ndim, x.ndim) -> x's type.
VJP: `grad_x = multiply(y, subtract(grad, sum(multiply(grad, y), axis=[axis], keepdims=True)))`, y the result.
FLOPs: 5 per element (max, subtract, exp, sum, divide).
Dtypes: float32, float64.)doc");
  reg.define(ops::log_softmax).set_args({"x"})
      .add_attr("axis", AttrKind::kInt, int64_t{-1})
      .set_type_rule(softmax_type).set_flops(per_input_element_flops<5>)
      .set_kernel(softmax_kernel<true>).set_may_fail().set_vjp(log_softmax_vjp)
      .set_doc(R"doc(log(softmax(x)) along `axis` (default -1), computed as (x - max) - log(sum(exp(x - max))) without
forming softmax. NumPy: none
(`m = x.max(axis, keepdims=True); x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))`, or
`scipy.special.log_softmax(x, axis)`). PyTorch: `torch.log_softmax(x, axis)`.

Type: x float; axis in [-x.ndim, x.ndim) -> x's type.
VJP: `grad_x = subtract(grad, multiply(exp(y), sum(grad, axis=[axis], keepdims=True)))`, y the result.
FLOPs: 5 per element (max, subtract, exp, sum, subtract the log-sum).
Dtypes: float32, float64.)doc");
  reg.define(ops::layer_norm).set_args({"x", "gamma", "beta"})
      .add_attr("axes", AttrKind::kIntList, std::vector<int64_t>{-1})
      .add_attr("epsilon", AttrKind::kFloat, 1e-5)
      .set_type_rule(layer_norm_type).set_flops(per_input_element_flops<7>)
      .set_kernel(layer_norm_kernel).set_may_fail().set_vjp(layer_norm_vjp)
      .set_doc(R"doc(Normalizes x over `axes` (default [-1]) to zero mean and unit variance, then scales by `gamma` and
shifts by `beta`: (x - mean) / sqrt(var + epsilon) * gamma + beta, with the mean and the biased
variance (divided by the count, not count - 1) taken over all the listed axes together. NumPy: none
(`m = x.mean(axes, keepdims=True); (x - m) / np.sqrt(x.var(axes, keepdims=True) + epsilon) * gamma + beta`
when axes are x's trailing axes in order). PyTorch:
`torch.nn.functional.layer_norm(x, x.shape[-len(axes):], gamma, beta, epsilon)` (axes the trailing
ones in order).

gamma and beta have the shape of x's dims at `axes`, in the order listed: axes=[2, 0] of x (a, b, c)
takes gamma and beta of shape (c, a). `epsilon` (default 1e-5) is added to the variance. There are
no center/scale switches as in TVM's layer_norm: pass ones and zeros.

Type: x float; gamma and beta of x's dtype with shape [x.shape[a] for a in axes]; axes non-empty, distinct and in range; epsilon >= 0 -> x's type; anything else is a TypeInferenceError.
VJP: with means over axes (keepdims), rstd = rsqrt(variance(x) + epsilon), xhat = (x - mean(x)) * rstd recomputed and gg = grad * gamma: `grad_x = rstd * (gg - mean(gg) - xhat * mean(gg * xhat))`, `grad_gamma = sum(grad * xhat)` and `grad_beta = sum(grad)` over the other axes, permuted into gamma's dim order.
FLOPs: 7 per element of x (mean, center, square, sum, normalize, scale, shift).
Dtypes: float32, float64.)doc");
  reg.define(ops::cross_entropy_with_logits).set_args({"logits", "labels"})
      .set_type_rule(cross_entropy_type).set_flops(per_input_element_flops<7>)
      .set_kernel(cross_entropy_kernel).set_may_fail().set_vjp(cross_entropy_vjp)
      .set_doc(R"doc(The softmax cross entropy of unnormalized scores `logits` against a target distribution `labels`:
for (N, C) inputs, the mean over the N rows of -sum(labels * log_softmax(logits, -1), -1); for (C,)
inputs, that sum. NumPy: none
(`m = logits.max(-1, keepdims=True); -(labels * (logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True)))).sum(-1).mean()`).
PyTorch: `torch.nn.functional.cross_entropy(logits, labels)` (with probability targets,
reduction="mean", no label smoothing).

`labels` is a float tensor of the logits' shape and dtype, one row per example: a one-hot row or any
distribution over the C classes (soft labels); rows are not checked to sum to 1, and the loss is
linear in labels. Class indices are not accepted: one-hot them, or use
`nll_loss(log_softmax(logits), targets)`, which takes int class indices.

TVM Relax's `relax.op.nn.cross_entropy_with_logits(predictions, labels)` has the same name but
applies no softmax: it computes -sum(predictions * labels) / N (N the first dim when the rank is 2
or more, the plain negated sum at rank 1), so its predictions must already be log-probabilities.
Ours takes raw logits and applies log_softmax over the last axis itself: ours(logits, labels) equals
TVM's(log_softmax(logits, -1), labels). Ours also accepts rank 1 or 2 only.

Type: logits float of rank 1 or 2; labels of logits' shape and dtype -> a scalar () of that dtype; another rank, shape or dtype is a TypeInferenceError.
VJP: with s = grad / N for (N, C) inputs (s = grad for (C,)) and p = log_softmax(logits, -1): `grad_logits = s * (exp(p) * sum(labels, axis=[-1], keepdims=True) - labels)`, `grad_labels = -s * p`.
FLOPs: 7 per element of logits (log_softmax, then multiply and sum).
Dtypes: float32, float64.)doc");
  reg.define(ops::nll_loss).set_args({"predictions", "targets"})
      .add_attr("reduction", AttrKind::kString, std::string(nll_reduction_name(NllReduction::kMean)))
      .add_attr("ignore_index", AttrKind::kInt, int64_t{-100})
      .set_type_rule(nll_loss_type).set_flops(nll_loss_flops).set_kernel(nll_loss_kernel).set_may_fail()
      .set_vjp(nll_loss_vjp)
      .set_doc(R"doc(Negative log likelihood of class-index targets: per row r, -predictions[r, targets[r]], or 0 where
targets[r] is `ignore_index` (default -100); then `reduction` "mean" (the default: the sum over the
rows not ignored divided by their count), "sum", or "none" (the per-row losses). NumPy: none
(`keep = targets != ignore_index; np.where(keep, -np.take_along_axis(predictions, np.where(keep, targets, 0)[..., None], -1)[..., 0], 0.0)`
are the per-row losses). PyTorch:
`torch.nn.functional.nll_loss(predictions, targets, reduction=reduction, ignore_index=ignore_index)`.

`predictions` are log-probabilities, (N, C) or unbatched (C,), usually log_softmax(logits):
nll_loss(log_softmax(z, -1), t) is PyTorch's cross_entropy(z, t). `targets` are class indices of
dtype int32 or int64 (PyTorch takes int64 only), shape (N,), or () for unbatched predictions. A
target that is neither in [0, C) nor ignore_index is an ExecutionError at run time. With every
target ignored, "mean" gives NaN (0 / 0), as in PyTorch. Sums are accumulated in float64.

TVM Relax's `relax.op.nn.nll_loss` also takes class weights and extra spatial dims (N, C, d1, ...);
ours has neither: every class weighs 1.

Type: predictions float (N, C) or (C,); targets int32 or int64 of shape (N,) or () to match; reduction "mean", "sum" or "none" -> () for mean and sum, targets' shape for none, predictions' dtype. Another shape, dtype or reduction is a TypeInferenceError.
VJP: `grad_predictions = nll_loss_backward(grad, predictions, targets, reduction, ignore_index)`; targets get none.
FLOPs: 2 per target (the negated gather and the accumulation).
Dtypes: float32, float64 for predictions; int32, int64 for targets.)doc");
  // nll_loss_backward(output_grad, predictions, targets, reduction, ignore_index): d predictions
  reg.define(ops::nll_loss_backward).set_args({"output_grad", "predictions", "targets"})
      .add_attr("reduction", AttrKind::kString, std::string(nll_reduction_name(NllReduction::kMean)))
      .add_attr("ignore_index", AttrKind::kInt, int64_t{-100})
      .set_type_rule(nll_loss_backward_type).set_flops(nll_loss_backward_flops)
      .set_kernel(nll_loss_backward_kernel).set_may_fail().set_vjp(nll_loss_backward_vjp)
      .set_doc(R"doc(The gradient of nll_loss with respect to its predictions, which nll_loss's VJP emits: zeros of
predictions' shape, except -output_grad[r] (reduction "none") or -output_grad (reduction "sum"; for
"mean", divided by the number of targets not ignored) at (r, targets[r]) of each row whose target is
not `ignore_index`. It reads only the shape of `predictions`. NumPy: none. PyTorch: none (aten's
`nll_loss_backward` without weights).

`reduction` and `ignore_index` are nll_loss's, and targets are checked as there (ExecutionError when
out of range).

Type: predictions float (N, C) or (C,); targets int32 or int64 of shape (N,) or (); output_grad of predictions' dtype with the shape nll_loss's result has for these attrs -> predictions' type; anything else is a TypeInferenceError.
VJP: linear in output_grad: `grad_output_grad = nll_loss(grad, targets, reduction, ignore_index)`; predictions and targets get none.
FLOPs: one per target.
Dtypes: float32, float64 for output_grad and predictions (one dtype); int32, int64 for targets.)doc");
  add_window_attrs(reg.define(ops::conv2d).set_args({"data", "weight"}))
      .add_attr("groups", AttrKind::kInt, int64_t{1})
      .set_type_rule(conv2d_type).set_flops(conv2d_flops).set_kernel(conv2d_kernel).set_may_fail()
      .set_vjp(conv2d_vjp)
      .set_doc(R"doc(2-D convolution (a cross-correlation, the kernel not flipped, as in deep-learning frameworks) of
`data` in NCHW layout with `weight` in OIHW layout, without bias: out[n, o, y, x] = sum over c, i, j
of padded_data[n, g * C/groups + c, y * stride_h + i * dilation_h, x * stride_w + j * dilation_w] *
weight[o, c, i, j], with g = o // (O / groups) and zero padding. NumPy: none. PyTorch:
`torch.nn.functional.conv2d(data, weight, stride=strides, padding=padding, dilation=dilation, groups=groups)`
(for 1 or 2 padding ints).

Layouts: data (N, C, H, W); weight (O, C / groups, KH, KW); output (N, O, OH, OW) with OH = floor((H
+ pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h) + 1, and OW likewise. `strides` and
`dilation` hold 1 int (both axes) or 2 (h, w), positive; `padding` holds 1 int (all sides), 2 (h, w:
top = bottom = h, left = right = w) or 4 (top, left, bottom, right, as TVM's), non-negative.
`groups` (default 1) splits the C input and O output channels into groups convolved separately
(groups = C is a depthwise convolution).

Type: data and weight float of one dtype and rank 4; C = weight's dim 1 * groups; O divisible by groups -> (N, O, OH, OW), data's dtype. Symbolic N, H and W are allowed when the division by the stride is exact (always for stride 1). A channel mismatch, an ill-formed attr or an output dim <= 0 is a TypeInferenceError.
VJP: `grad_data = conv2d_backward_data(grad, weight, data_shape=data.shape, strides, padding, dilation, groups)`, `grad_weight = conv2d_backward_weight(grad, data, weight_shape=weight.shape, strides, padding, dilation, groups)`.
FLOPs: 2*N*O*OH*OW*(C/groups)*KH*KW (a multiply-add per weight tap and output element).
Dtypes: float32, float64.)doc");
  // conv2d_backward_data(output_grad, weight, data_shape, strides, padding, dilation, groups): d data
  add_window_attrs(reg.define(ops::conv2d_backward_data).set_args({"output_grad", "weight"})
                       .add_attr("data_shape", AttrKind::kShape))
      .add_attr("groups", AttrKind::kInt, int64_t{1})
      .set_type_rule(conv2d_backward_data_type).set_flops(conv2d_backward_data_flops)
      .set_kernel(conv2d_backward_data_kernel).set_may_fail().set_vjp(conv2d_backward_data_vjp)
      .set_doc(R"doc(The gradient of conv2d with respect to its data, which conv2d's VJP emits: given `output_grad` (N,
O, OH, OW) and `weight` (O, C / groups, KH, KW), the transposed convolution of output_grad, an array
of shape `data_shape` (N, C, H, W). NumPy: none. PyTorch:
`torch.nn.grad.conv2d_input(data_shape, weight, output_grad, strides, padding, dilation, groups)`.

`data_shape` fixes the result's size, which the output alone does not (with stride > 1, several
input sizes give one output size); `strides`, `padding`, `dilation` and `groups` are the forward
conv2d's, in the same forms.

Type: output_grad and weight float of one dtype and rank 4; data_shape of 4 dims; output_grad's shape must be conv2d's output shape for data_shape, weight and these attrs -> data_shape, output_grad's dtype; anything else is a TypeInferenceError.
VJP: bilinear: `grad_output_grad = conv2d(grad, weight, strides, padding, dilation, groups)`, `grad_weight = conv2d_backward_weight(output_grad, grad, weight_shape=weight.shape, strides, padding, dilation, groups)`.
FLOPs: 2*N*O*OH*OW*(C/groups)*KH*KW, as conv2d.
Dtypes: float32, float64.)doc");
  // conv2d_backward_weight(output_grad, data, weight_shape, strides, padding, dilation, groups): d weight
  add_window_attrs(reg.define(ops::conv2d_backward_weight).set_args({"output_grad", "data"})
                       .add_attr("weight_shape", AttrKind::kShape))
      .add_attr("groups", AttrKind::kInt, int64_t{1})
      .set_type_rule(conv2d_backward_weight_type).set_flops(conv2d_backward_weight_flops)
      .set_kernel(conv2d_backward_weight_kernel).set_may_fail().set_vjp(conv2d_backward_weight_vjp)
      .set_doc(R"doc(The gradient of conv2d with respect to its weight, which conv2d's VJP emits: given `output_grad` (N,
O, OH, OW) and `data` (N, C, H, W), the correlation of data with output_grad summed over the batch,
an array of shape `weight_shape` (O, C / groups, KH, KW). NumPy: none. PyTorch:
`torch.nn.grad.conv2d_weight(data, weight_shape, output_grad, strides, padding, dilation, groups)`.

`weight_shape` gives the kernel size; `strides`, `padding`, `dilation` and `groups` are the forward
conv2d's, in the same forms.

Type: output_grad and data float of one dtype and rank 4; weight_shape of 4 dims; output_grad's shape must be conv2d's output shape for data, weight_shape and these attrs -> weight_shape, output_grad's dtype; anything else is a TypeInferenceError.
VJP: bilinear: `grad_output_grad = conv2d(data, grad, strides, padding, dilation, groups)`, `grad_data = conv2d_backward_data(output_grad, grad, data_shape=data.shape, strides, padding, dilation, groups)`.
FLOPs: 2*N*O*OH*OW*(C/groups)*KH*KW, as conv2d.
Dtypes: float32, float64.)doc");
  add_window_attrs(reg.define(ops::max_pool2d).set_args({"x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .set_type_rule(max_pool2d_type).set_flops(pool2d_flops).set_kernel(max_pool2d_kernel)
      .set_vjp(max_pool2d_vjp)
      .set_doc(R"doc(The maximum of each window of x. NumPy: none. PyTorch:
`torch.nn.functional.max_pool2d(x, pool_size, strides, padding, dilation, ceil_mode=ceil_mode)`.

Layout NCHW: x (N, C, H, W) -> (N, C, OH, OW), each channel pooled separately. `pool_size` (KH, KW)
is 1 int (both axes) or 2 (h, w), positive; `strides` and `dilation` hold 1 int (both axes) or 2 (h,
w), positive; `padding` holds 1 int (all sides), 2 (h, w: top = bottom = h, left = right = w) or 4
(top, left, bottom, right, as TVM's), non-negative, of any size (PyTorch limits padding to half the
window). `strides` defaults to [1, 1], not to pool_size as in PyTorch: pass strides=pool_size for
non-overlapping windows. Window (y, x) covers rows y * stride_h - pad_top + i * dilation_h for i <
KH, and columns likewise. OH = floor((H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) /
stride_h) + 1, OW likewise; with `ceil_mode` (default false), ceil instead of floor, less a last
window that would start in the bottom or right padding (as PyTorch). Padding never wins: it acts as
-inf (the dtype's lowest value for integers), so a window wholly in the padding gives -inf. A NaN in
a window gives NaN.

Type: x of rank 4, any numeric dtype -> (N, C, OH, OW), x's dtype. Symbolic H and W are allowed when the division by the stride is exact (always for stride 1). An ill-formed attr or an output dim <= 0 is a TypeInferenceError.
VJP: `grad_x = max_pool2d_backward(grad, x, pool_size, strides, padding, dilation, ceil_mode)`.
FLOPs: N*C*OH*OW*KH*KW (a compare per window tap).
Dtypes: float32, float64, int32, int64 (the gradient needs a float).)doc");
  // max_pool2d_backward(output_grad, x, pool_size, strides, padding, dilation, ceil_mode): d x
  add_window_attrs(reg.define(ops::max_pool2d_backward).set_args({"output_grad", "x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .set_type_rule(pool2d_backward_type).set_flops(pool2d_backward_flops)
      .set_kernel(max_pool2d_backward_kernel).set_differentiable(false)
      .set_doc(R"doc(The gradient of max_pool2d with respect to x, which max_pool2d's VJP emits: zeros of x's shape, each
`output_grad` element added at its window's first maximal tap in row-major order (the first NaN, if
the window holds one), so ties send the whole gradient to one tap, as PyTorch does. A window wholly
in the padding passes nothing. NumPy: none. PyTorch: none (aten's
`max_pool2d_with_indices_backward`, given max_pool2d's indices).

`pool_size`, `strides`, `padding`, `dilation` and `ceil_mode` are the forward max_pool2d's, in the
same forms.

Type: x float of rank 4; output_grad of x's dtype with max_pool2d's output shape for x and these attrs -> x's type; anything else is a TypeInferenceError.
VJP: none: the op is marked not differentiable, so Gradient sends no gradient through it (a second derivative through max_pool2d lacks this term).
FLOPs: N*C*OH*OW*KH*KW (over output_grad's elements).
Dtypes: float32, float64.)doc");
  add_window_attrs(reg.define(ops::avg_pool2d).set_args({"x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .add_attr("count_include_pad", AttrKind::kBool, false)
      .set_type_rule(avg_pool2d_type).set_flops(pool2d_flops).set_kernel(avg_pool2d_kernel)
      .set_vjp(avg_pool2d_vjp)
      .set_doc(R"doc(The mean of each window of x. NumPy: none. PyTorch:
`torch.nn.functional.avg_pool2d(x, pool_size, strides, padding, ceil_mode, count_include_pad)`
(PyTorch's has no dilation).

Layout NCHW: x (N, C, H, W) -> (N, C, OH, OW), each channel pooled separately. `pool_size` (KH, KW)
is 1 int (both axes) or 2 (h, w), positive; `strides` and `dilation` hold 1 int (both axes) or 2 (h,
w), positive; `padding` holds 1 int (all sides), 2 (h, w: top = bottom = h, left = right = w) or 4
(top, left, bottom, right, as TVM's), non-negative, of any size (PyTorch limits padding to half the
window). `strides` defaults to [1, 1], not to pool_size as in PyTorch: pass strides=pool_size for
non-overlapping windows. Window (y, x) covers rows y * stride_h - pad_top + i * dilation_h for i <
KH, and columns likewise. OH = floor((H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) /
stride_h) + 1, OW likewise; with `ceil_mode` (default false), ceil instead of floor, less a last
window that would start in the bottom or right padding (as PyTorch). The divisor is the number of
the window's taps inside x when `count_include_pad` is false (the default, where PyTorch's default
is true), or the taps inside the padded x when it is true (taps past the padding, which ceil_mode
can add, never count, as in PyTorch). A window wholly in the padding with count_include_pad false
gives NaN (0 / 0).

Type: x float of rank 4 -> (N, C, OH, OW), x's dtype. Symbolic H and W are allowed when the division by the stride is exact (always for stride 1). An ill-formed attr or an output dim <= 0 is a TypeInferenceError.
VJP: `grad_x = avg_pool2d_backward(grad, x, pool_size, strides, padding, dilation, ceil_mode, count_include_pad)`.
FLOPs: N*C*OH*OW*KH*KW (an add per window tap).
Dtypes: float32, float64.)doc");
  // avg_pool2d_backward(output_grad, x, pool_size, strides, padding, dilation, ceil_mode,
  // count_include_pad): d x
  add_window_attrs(reg.define(ops::avg_pool2d_backward).set_args({"output_grad", "x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .add_attr("count_include_pad", AttrKind::kBool, false)
      .set_type_rule(pool2d_backward_type).set_flops(pool2d_backward_flops)
      .set_kernel(avg_pool2d_backward_kernel).set_vjp(avg_pool2d_backward_vjp)
      .set_doc(R"doc(The gradient of avg_pool2d with respect to x, which avg_pool2d's VJP emits: zeros of x's shape, each
`output_grad` element divided by its window's divisor and added at each of the window's taps inside
x. It reads only the shape of `x`. NumPy: none. PyTorch: none (aten's `avg_pool2d_backward`).

`pool_size`, `strides`, `padding`, `dilation`, `ceil_mode` and `count_include_pad` are the forward
avg_pool2d's, in the same forms.

Type: x float of rank 4; output_grad of x's dtype with avg_pool2d's output shape for x and these attrs -> x's type; anything else is a TypeInferenceError.
VJP: linear in output_grad: `grad_output_grad = avg_pool2d(grad, pool_size, strides, padding, dilation, ceil_mode, count_include_pad)`; x gets none.
FLOPs: N*C*OH*OW*KH*KW (over output_grad's elements).
Dtypes: float32, float64.)doc");
}

}  // namespace aj
