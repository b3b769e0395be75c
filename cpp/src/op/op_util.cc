// Shared helpers for the op families (see op_util.h).
#include "op_util.h"

#include <algorithm>
#include <map>

namespace aj {
namespace {

Dim dim_from_terms(const std::vector<DimTerm>& terms) {
  Dim out(0);
  for (const auto& t : terms) {
    Dim term(t.coeff);
    for (const auto& factor : t.monomial)
      for (int p = 0; p < factor.second; ++p) term = term * Dim::symbol(factor.first);
    out = out + term;
  }
  return out;
}

// m / d when every power of d is at most the same symbol's power in m.
std::optional<Monomial> divide_monomial(const Monomial& m, const Monomial& d) {
  std::map<std::string, int> powers(m.begin(), m.end());
  for (const auto& factor : d) {
    auto it = powers.find(factor.first);
    if (it == powers.end() || it->second < factor.second) return std::nullopt;
    it->second -= factor.second;
  }
  Monomial out;
  for (const auto& p : powers)
    if (p.second > 0) out.push_back(p);
  return out;
}

void require_dtype(const TypeContext& ctx, size_t i, bool ok, const char* expected) {
  if (!ok)
    ctx.fail("argument '", ctx.op.arg_names[i], "' must be ", expected, ", got ",
             dtype_name(ctx.tensor(i).dtype()));
}

}  // namespace

Dim num_elements(const Shape& shape) {
  Dim n(1);
  for (const auto& d : shape) n = n * d;
  return n;
}

std::optional<Dim> exact_divide(const Dim& a, const Dim& b) {
  if (a == b && b != Dim(0)) return Dim(1);
  std::vector<DimTerm> divisor = b.terms();
  if (divisor.size() != 1) return std::nullopt;  // zero, or a sum of several terms
  const DimTerm& d = divisor[0];
  std::vector<DimTerm> quotient;
  for (const auto& t : a.terms()) {
    auto m = divide_monomial(t.monomial, d.monomial);
    if (!m || (d.coeff == -1 && t.coeff == INT64_MIN) || t.coeff % d.coeff != 0) return std::nullopt;
    quotient.push_back(DimTerm{*m, t.coeff / d.coeff});
  }
  return dim_from_terms(quotient);
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
    else if (is_const_one(*da)) out[i] = *db;
    else if (is_const_one(*db)) out[i] = *da;
    else
      ctx.fail("cannot broadcast shapes ", shape_to_string(a), " and ", shape_to_string(b),
               ": dims ", da->to_string(), " and ", db->to_string(),
               (da->is_const() && db->is_const()) ? " differ" : " are not provably equal");
  }
  return out;
}

void require_broadcastable(const TypeContext& ctx, const Shape& from, const char* from_name,
                           const Shape& to, const char* to_name) {
  if (from.size() > to.size())
    ctx.fail(from_name, " ", shape_to_string(from), " does not broadcast to the lower-rank ",
             to_name, " ", shape_to_string(to));
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    const Dim& d = from[i];
    if (d == to[off + i] || is_const_one(d)) continue;
    ctx.fail(from_name, " ", shape_to_string(from), " does not broadcast to ", to_name, " ",
             shape_to_string(to), ": dim ", i, " (", d.to_string(), ") is neither 1 nor ",
             to[off + i].to_string());
  }
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
  require_dtype(ctx, i, is_float(ctx.tensor(i).dtype()), "float32 or float64");
}

void require_numeric(const TypeContext& ctx, size_t i) {
  require_dtype(ctx, i, ctx.tensor(i).dtype() != DType::kBool,
                "numeric (float32, float64, int32 or int64)");
}

void require_int(const TypeContext& ctx, size_t i) {
  require_dtype(ctx, i, is_int(ctx.tensor(i).dtype()), "int32 or int64");
}

void require_bool(const TypeContext& ctx, size_t i) {
  require_dtype(ctx, i, ctx.tensor(i).dtype() == DType::kBool, "bool");
}

void require_rank(const TypeContext& ctx, size_t i, size_t ndim) {
  const TypeNode& t = ctx.tensor(i);
  if (t.ndim() != ndim)
    ctx.fail("argument '", ctx.op.arg_names[i], "' must have rank ", ndim, ", got shape ",
             shape_to_string(t.shape()));
}

Dim elementwise_flops(const CallNode& call) {
  const Type& t = call.type();
  if (t->is_tensor()) return num_elements(t->shape());
  Dim total(0);
  for (const auto& f : t->fields())
    if (f->is_tensor()) total = total + num_elements(f->shape());
  return total;
}

Dim zero_flops(const CallNode&) { return Dim(0); }

}  // namespace aj

// ---- Helpers for VJP rules (op_util.h) ----
#include "adjoint/autodiff/vjp.h"

namespace aj {

std::vector<int64_t> wrap_axes(const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int64_t> out;
  for (auto a : axes) out.push_back(a < 0 ? a + ndim : a);
  return out;
}

std::vector<int64_t> other_axes(const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(i);
  return out;
}

Expr count_fraction(VJPContext& ctx, double numerator, const Shape& dims, DType dtype) {
  Dim count = num_elements(dims);
  if (count.is_const()) return ctx.scalar(numerator / static_cast<double>(count.value()), dtype);
  Expr n = ctx.make(ops::sum, {ctx.make(ops::ones, {}, {{"shape", dims}, {"dtype", dtype}})});
  return ctx.make(ops::divide, {ctx.scalar(numerator, dtype), n});
}

KwAttrs forward_attrs(const VJPContext& ctx, std::initializer_list<const char*> names) {
  KwAttrs out;
  for (const char* name : names) out.emplace_back(name, ctx.attr(name));
  return out;
}

}  // namespace aj
