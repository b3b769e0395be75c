// Shape manipulation: permute_dims, concat, split, broadcast_to.
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

// broadcast_to(x, shape): x's dims, right-aligned, equal the target's or are 1.
Type broadcast_to_type(const TypeContext& ctx) {
  const TypeNode& x = ctx.tensor(0);
  const Shape& target = ctx.attr_shape("shape");
  require_broadcastable(ctx, x.shape(), "x", target, "shape");
  return TypeNode::tensor(target, x.dtype());
}

}  // namespace

void register_manipulate_ops(OpRegistry& reg) {
  reg.define("permute_dims").set_family("manipulate").set_args({"x"})
      .add_attr("axes", AttrKind::kOptIntList, NoneValue{})
      .set_type_rule(permute_dims_type).set_flops(zero_flops);
  reg.define("concat").set_family("manipulate").set_args({"tensors"})
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(concat_type).set_flops(zero_flops);
  reg.define("split").set_family("manipulate").set_args({"x"})
      .add_attr("indices_or_sections", AttrKind::kIntOrIntList)
      .add_attr("axis", AttrKind::kInt, int64_t{0})
      .set_type_rule(split_type).set_flops(zero_flops);
  reg.define("broadcast_to").set_family("manipulate").set_args({"x"})
      .add_attr("shape", AttrKind::kShape)
      .set_type_rule(broadcast_to_type).set_flops(zero_flops);
}

}  // namespace aj
