// Neural-network ops: softmax and log_softmax, layer_norm, the losses
// cross_entropy_with_logits and nll_loss, and the NCHW sliding-window ops
// conv2d (OIHW weights), max_pool2d and avg_pool2d.
#include <array>
#include <string>

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

// predictions float (n, c), targets int (n,) -> () for "mean" and "sum",
// (n,) for "none"; unbatched predictions (c,), targets () -> ().
Type nll_loss_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  require_int(ctx, 1);
  const TypeNode& pred = ctx.tensor(0);
  const TypeNode& targets = ctx.tensor(1);
  const std::string& reduction = ctx.attr_string("reduction");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    ctx.fail("attr 'reduction' must be \"mean\", \"sum\" or \"none\", got \"", reduction, "\"");
  if (pred.ndim() < 1 || pred.ndim() > 2)
    ctx.fail("argument 'predictions' must have shape (N, C) or (C,), got ",
             shape_to_string(pred.shape()));
  Shape batch(pred.shape().begin(), pred.shape().end() - 1);
  if (targets.shape() != batch)
    ctx.fail("argument 'targets' must have shape ", shape_to_string(batch), " for predictions ",
             shape_to_string(pred.shape()), ", got ", shape_to_string(targets.shape()));
  return TypeNode::tensor(reduction == "none" ? batch : Shape{}, pred.dtype());
}

// ---- sliding windows (conv2d, pools) ----

// An attr of 1 or 2 positive ints as (h, w); [s] means (s, s).
std::array<int64_t, 2> positive_pair_attr(const TypeContext& ctx, const char* name) {
  const auto& v = ctx.attr_ints(name);
  if (v.empty() || v.size() > 2)
    ctx.fail("attr '", name, "' must hold 1 or 2 ints, got ", attr_to_string(v));
  for (auto i : v)
    if (i <= 0) ctx.fail("attr '", name, "' must hold positive ints, got ", attr_to_string(v));
  return {v.front(), v.back()};
}

// padding: 1 int, 2 (h, w) or 4 (top, left, bottom, right) non-negative ints,
// returned as (top, left, bottom, right).
std::array<int64_t, 4> padding_attr(const TypeContext& ctx) {
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

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// len -> floor((len + pad_lo + pad_hi - dilation*(kernel-1) - 1) / stride) + 1,
// with ceil in ceil_mode (less a last window starting in the high padding, as
// in PyTorch). A polynomial when the division is exact (always for stride 1);
// otherwise the dims must be constant.
Dim window_output(const TypeContext& ctx, const char* axis, const Dim& len, const Window& w,
                  bool ceil_mode) {
  Dim span = len + Dim(w.pad_lo + w.pad_hi) - Dim(w.dilation) * (w.kernel - Dim(1)) - Dim(1);
  std::optional<Dim> steps = exact_divide(span, Dim(w.stride));
  if (!steps && span.is_const())
    steps = ceil_mode ? -floor_div(-span.value(), w.stride) : floor_div(span.value(), w.stride);
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
Type conv2d_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  require_rank(ctx, 1, 4);
  require_float(ctx, 0);
  require_same_dtype(ctx, 0, 1);
  const Shape& d = ctx.tensor(0).shape();
  const Shape& w = ctx.tensor(1).shape();
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
  return TypeNode::tensor({d[0], w[0], oh, ow}, ctx.tensor(0).dtype());
}

// x (N, C, H, W), pool_size (KH, KW) -> (N, C, OH, OW)
Type pool2d_type(const TypeContext& ctx) {
  require_rank(ctx, 0, 4);
  const Shape& x = ctx.tensor(0).shape();
  auto size = positive_pair_attr(ctx, "pool_size");
  auto strides = positive_pair_attr(ctx, "strides");
  auto dilation = positive_pair_attr(ctx, "dilation");
  auto pad = padding_attr(ctx);
  bool ceil_mode = ctx.attr_bool("ceil_mode");
  Dim oh = window_output(ctx, "height", x[2], {size[0], pad[0], pad[2], strides[0], dilation[0]},
                         ceil_mode);
  Dim ow = window_output(ctx, "width", x[3], {size[1], pad[1], pad[3], strides[1], dilation[1]},
                         ceil_mode);
  return TypeNode::tensor({x[0], x[1], oh, ow}, ctx.tensor(0).dtype());
}

// As pool2d_type, x numeric.
Type max_pool2d_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  return pool2d_type(ctx);
}

// As pool2d_type, x float.
Type avg_pool2d_type(const TypeContext& ctx) {
  require_float(ctx, 0);
  return pool2d_type(ctx);
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
void register_nn_ops(OpRegistry& reg) {
  for (const char* name : {"softmax", "log_softmax"})
    reg.define(name).set_family("nn").set_args({"x"})
        .add_attr("axis", AttrKind::kInt, int64_t{-1})
        .set_type_rule(softmax_type).set_flops(per_input_element_flops<5>);
  reg.define("layer_norm").set_family("nn").set_args({"x", "gamma", "beta"})
      .add_attr("axes", AttrKind::kIntList, std::vector<int64_t>{-1})
      .add_attr("epsilon", AttrKind::kFloat, 1e-5)
      .set_type_rule(layer_norm_type).set_flops(per_input_element_flops<7>);
  reg.define("cross_entropy_with_logits").set_family("nn").set_args({"logits", "labels"})
      .set_type_rule(cross_entropy_type).set_flops(per_input_element_flops<7>);
  reg.define("nll_loss").set_family("nn").set_args({"predictions", "targets"})
      .add_attr("reduction", AttrKind::kString, std::string("mean"))
      .add_attr("ignore_index", AttrKind::kInt, int64_t{-100})
      .set_type_rule(nll_loss_type).set_flops(nll_loss_flops);
  add_window_attrs(reg.define("conv2d").set_family("nn").set_args({"data", "weight"}))
      .add_attr("groups", AttrKind::kInt, int64_t{1})
      .set_type_rule(conv2d_type).set_flops(conv2d_flops);
  add_window_attrs(reg.define("max_pool2d").set_family("nn").set_args({"x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .set_type_rule(max_pool2d_type).set_flops(pool2d_flops);
  add_window_attrs(reg.define("avg_pool2d").set_family("nn").set_args({"x"})
                       .add_attr("pool_size", AttrKind::kIntList))
      .add_attr("ceil_mode", AttrKind::kBool, false)
      .add_attr("count_include_pad", AttrKind::kBool, false)
      .set_type_rule(avg_pool2d_type).set_flops(pool2d_flops);
}

}  // namespace aj
