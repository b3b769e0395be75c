// Shape manipulation and data movement: permute_dims, reshape, broadcast_to,
// collapse_sum_to, expand_dims, squeeze, concat, split, take, where, cumsum,
// triu. All move data only (zero FLOPs) except cumsum.
#include <algorithm>

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

// x (a, b, ...) -> shape, when the element counts are provably equal; one -1
// in shape becomes (elements of x) / (product of the other dims).
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
    auto inferred = exact_divide(total, rest);
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

// broadcast_to(x, shape): x's dims, right-aligned, equal the target's or are 1.
Type broadcast_to_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  require_broadcastable(ctx, x.shape(), "x", target, "shape");
  return TypeNode::tensor(target, x.dtype());
}

// collapse_sum_to(x, shape) -> shape, where shape broadcasts to x's shape
// (the reverse of broadcast_to: sums over the broadcast dims).
Type collapse_sum_to_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  require_broadcastable(ctx, target, "shape", x.shape(), "x");
  return TypeNode::tensor(target, x.dtype());
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
    const auto& idx = std::get<std::vector<int64_t>>(spec);
    Dim prev(0);
    int64_t prev_i = 0;
    for (auto i : idx) {
      if (i < prev_i) ctx.fail("indices ", attr_to_string(idx), " must be non-decreasing");
      if (i < 0 || (len.is_const() && i > len.value()))
        ctx.fail("index ", i, " is out of range for dim ", len.to_string());
      parts.push_back(Dim(i) - prev);
      prev = Dim(i);
      prev_i = i;
    }
    parts.push_back(len - prev);
  }
  std::vector<Type> fields;
  for (const auto& p : parts) {
    Shape s = x.shape();
    s[axis] = p;
    fields.push_back(TypeNode::tensor(std::move(s), x.dtype()));
  }
  return TypeNode::tuple(std::move(fields));
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

// condition bool, x1, x2 of one dtype -> broadcast of all three, x1's dtype
Type where_type(const TypeContext& ctx) {
  require_bool(ctx, 0);
  require_same_dtype(ctx, 1, 2);
  Shape s = broadcast_shapes(ctx, ctx.tensor(0).shape(), ctx.tensor(1).shape());
  return TypeNode::tensor(broadcast_shapes(ctx, s, ctx.tensor(2).shape()), ctx.tensor(1).dtype());
}

// x (...) numeric, axis in range -> same type
Type cumsum_type(const TypeContext& ctx) {
  require_numeric(ctx, 0);
  normalize_axis(ctx, ctx.attr_int("axis"), static_cast<int64_t>(ctx.tensor(0).ndim()));
  return ctx.arg_type(0);
}

// x (..., m, n), rank >= 2 -> same type
Type triu_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  if (x.ndim() < 2)
    ctx.fail("argument 'x' must have rank >= 2, got shape ", shape_to_string(x.shape()));
  return ctx.arg_type(0);
}

}  // namespace

void register_manipulate_ops(OpRegistry& reg) {
  reg.define("permute_dims").set_family("manipulate").set_args({"x"})
      .add_attr("axes", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(permute_dims_type).set_flops(zero_flops);
  reg.define("reshape").set_family("manipulate").set_args({"x"})
      .add_attr("shape", AttrKind::kReshapeShape)
      .set_type_rule(reshape_type).set_flops(zero_flops);
  reg.define("broadcast_to").set_family("manipulate").set_args({"x"})
      .add_attr("shape", AttrKind::kShape)
      .set_type_rule(broadcast_to_type).set_flops(zero_flops);
  reg.define("collapse_sum_to").set_family("manipulate").set_args({"x"})
      .add_attr("shape", AttrKind::kShape)
      .set_type_rule(collapse_sum_to_type).set_flops(zero_flops);
  reg.define("expand_dims").set_family("manipulate").set_args({"x"})
      .add_attr("axis", AttrKind::kIntList)
      .set_type_rule(expand_dims_type).set_flops(zero_flops);
  reg.define("squeeze").set_family("manipulate").set_args({"x"})
      .add_attr("axis", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(squeeze_type).set_flops(zero_flops);
  reg.define("concat").set_family("manipulate").set_args({"tensors"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(concat_type).set_flops(zero_flops);
  reg.define("split").set_family("manipulate").set_args({"x"})
      .add_attr("indices_or_sections", AttrKind::kIntOrIntList)
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(split_type).set_flops(zero_flops);
  reg.define("take").set_family("manipulate").set_args({"x", "indices"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(take_type).set_flops(zero_flops);
  reg.define("where").set_family("manipulate").set_args({"condition", "x1", "x2"})
      .set_type_rule(where_type).set_flops(zero_flops);
  // cumsum does one add per element.
  reg.define("cumsum").set_family("manipulate").set_args({"x"})
      .add_attr("axis", AttrKind::kInt, int64_t{-1})
      .set_type_rule(cumsum_type).set_flops(elementwise_flops);
  reg.define("triu").set_family("manipulate").set_args({"x"})
      .add_attr("k", AttrKind::kInt, int64_t{0})
      .set_type_rule(triu_type).set_flops(zero_flops);
}

}  // namespace aj
