// Shared shape helpers for the op families (see op_util.h).
#include "op_util.h"

#include <algorithm>

namespace aj {

Dim num_elements(const Shape& shape) {
  Dim n(1);
  for (const auto& d : shape) n = n * d;
  return n;
}

Shape broadcast_shapes(const TypeContext& ctx, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim* da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim* db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (*da == *db) out[i] = *da;
    else if (da->is_const() && da->value() == 1) out[i] = *db;
    else if (db->is_const() && db->value() == 1) out[i] = *da;
    else
      ctx.fail("cannot broadcast shapes ", shape_to_string(a), " and ", shape_to_string(b),
               ": dims ", da->to_string(), " and ", db->to_string(),
               (da->is_const() && db->is_const()) ? " differ" : " are not provably equal");
  }
  return out;
}

int64_t normalize_axis(const TypeContext& ctx, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim)
    ctx.fail("axis ", axis, " is out of range for a tensor of rank ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int64_t> normalize_axes(const TypeContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t ndim) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (auto a : axes) {
    int64_t x = normalize_axis(ctx, a, ndim);
    if (std::find(out.begin(), out.end(), x) != out.end()) ctx.fail("axis ", a, " repeated");
    out.push_back(x);
  }
  return out;
}

void require_same_dtype(const TypeContext& ctx, size_t i, size_t j) {
  const TypeNode& a = ctx.tensor(i);
  const TypeNode& b = ctx.tensor(j);
  if (a.dtype() != b.dtype())
    ctx.fail("arguments '", ctx.op.arg_names[i], "' and '", ctx.op.arg_names[j],
             "' must have the same dtype, got ", dtype_name(a.dtype()), " and ",
             dtype_name(b.dtype()));
}

void require_float(const TypeContext& ctx, size_t i) {
  const TypeNode& a = ctx.tensor(i);
  if (!is_float(a.dtype()))
    ctx.fail("argument '", ctx.op.arg_names[i], "' must be float32 or float64, got ",
             dtype_name(a.dtype()));
}

Dim elementwise_flops(const CallNode& call) {
  const Type& t = call.type();
  if (t->is_tensor()) return num_elements(t->shape());
  Dim total(0);
  for (const auto& f : t->fields())
    if (f->is_tensor()) total = total + num_elements(f->shape());
  return total;
}

}  // namespace aj
