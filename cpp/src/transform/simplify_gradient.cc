// SimplifyGradient: the rules that turn what reverse mode emits around
// matmul and transposes into the forms a person would write (DESIGN.md §6).
// "T" is permute_dims swapping the last two axes. Rules, in order:
//   permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q), or x when identity
//   permute_dims(x, identity)           -> x
//   T(matmul(a, b))                     -> matmul(T(b), T(a))  (ranks >= 2; T(T(y)) cancels to y)
//   broadcast_to(x, shape of x)         -> x
//   reshape(x, shape of x)              -> x
//   collapse_sum_to(x, shape of x)      -> x
//   astype(x, dtype of x)               -> x
//   matmul(s, b) / matmul(a, s), s a broadcast scalar, large enough
//                                       -> broadcast_to(s * sum(b, axis=-2) / s * sum(a, axis=-1))
//   T(broadcast_to(x, shape)), x a row or column of the same rank
//                                       -> broadcast_to(T(x), T(shape))
// Then dead-code elimination removes what the rewrites left unused.
//
// The matmul rule is strength reduction: the seed of a sum or mean loss is a
// broadcast scalar, and every linear layer it reaches first multiplies it
// into two GEMMs whose rows (or columns) are all the same sum. It applies
// from kMinMatmulFlops: below that one matmul instruction runs faster than
// a sum and a broadcast (`python -m adjoint.bench passes` prints the
// crossover), and small adjoints keep the matmul forms of DESIGN.md §6.
#include <numeric>

#include "adjoint/analysis/verifier.h"
#include "adjoint/transform/passes.h"
#include "adjoint/transform/rewrite.h"

namespace aj {
namespace {

// The full permutation of a permute_dims call (axes=None reverses all).
std::vector<int64_t> permutation(const CallNode& c) {
  int64_t n = static_cast<int64_t>(c.args()[0]->type()->ndim());
  const AttrValue& axes = c.attrs()[0];
  std::vector<int64_t> p(n);
  if (std::holds_alternative<NoneValue>(axes)) {
    for (int64_t i = 0; i < n; ++i) p[i] = n - 1 - i;
    return p;
  }
  const auto& a = std::get<std::vector<int64_t>>(axes);
  for (int64_t i = 0; i < n; ++i) p[i] = a[i] < 0 ? a[i] + n : a[i];
  return p;
}

bool is_identity(const std::vector<int64_t>& p) {
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

bool is_transpose(const CallNode* c) { return c && c->op() == ops::permute_dims && swaps_last_two(permutation(*c)); }

// permute_dims(x, p) in canonical form: no axes for a full reversal of rank 2.
Expr permute(const RewriteContext& ctx, const Expr& x, const std::vector<int64_t>& p) {
  if (p.size() == 2 && p[0] == 1 && p[1] == 0) return ctx.make(ops::permute_dims, {x});
  return ctx.make(ops::permute_dims, {x}, {{"axes", p}});
}

// T(x), or y when x is bound to T(y).
Expr transpose(const RewriteContext& ctx, const Expr& x) {
  const CallNode* c = ctx.bound_call(x, ops::permute_dims);
  if (is_transpose(c)) return c->args()[0];
  std::vector<int64_t> p(x->type()->ndim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[p.size() - 1], p[p.size() - 2]);
  return permute(ctx, x, p);
}

// permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q), or x
Expr fold_permutes(const CallNode& call, const RewriteContext& ctx) {
  if (call.op() != ops::permute_dims) return nullptr;
  const CallNode* inner = ctx.bound_call(call.args()[0], ops::permute_dims);
  if (!inner) return nullptr;
  std::vector<int64_t> p = permutation(*inner), q = permutation(call), pq(q.size());
  for (size_t i = 0; i < q.size(); ++i) pq[i] = p[q[i]];
  if (is_identity(pq)) return inner->args()[0];
  return permute(ctx, inner->args()[0], pq);
}

// permute_dims(x, identity) -> x
Expr drop_identity_permute(const CallNode& call, const RewriteContext&) {
  if (call.op() != ops::permute_dims || !is_identity(permutation(call))) return nullptr;
  return call.args()[0];
}

// T(matmul(a, b)) -> matmul(T(b), T(a)), for operands of rank >= 2
Expr transpose_of_matmul(const CallNode& call, const RewriteContext& ctx) {
  if (!is_transpose(&call)) return nullptr;
  const CallNode* mm = ctx.bound_call(call.args()[0], ops::matmul);
  if (!mm || mm->args()[0]->type()->ndim() < 2 || mm->args()[1]->type()->ndim() < 2) return nullptr;
  const AttrValue& out_dtype = mm->attrs()[0];
  Expr tb = transpose(ctx, mm->args()[1]), ta = transpose(ctx, mm->args()[0]);
  return ctx.make(ops::matmul, {tb, ta}, {{"out_dtype", out_dtype}});
}

// An op whose result equals its input when shapes (or dtypes) already match.
template <OpId Op>
Expr drop_identity(const CallNode& call, const RewriteContext&) {
  if (call.op().id != Op) return nullptr;
  const Expr& x = call.args()[0];
  return type_equal(x->type(), call.type()) ? x : nullptr;
}

// The smallest matmul, in FLOPs (a 32x32x32 GEMM), that matmul_of_broadcast_scalar
// turns into a sum.
constexpr int64_t kMinMatmulFlops = int64_t{1} << 16;

bool all_unit_dims(const Type& t) {
  for (const Dim& d : t->shape())
    if (!d.is_const() || d.value() != 1) return false;
  return true;
}

// s when every element of e is s: e is bound to broadcast_to(s, shape) with
// s of one element, or to a permutation of such a broadcast.
Expr broadcast_scalar(const RewriteContext& ctx, const Expr& e) {
  const CallNode* c = ctx.bound_call(e);
  if (c && c->op() == ops::permute_dims) c = ctx.bound_call(c->args()[0]);
  if (!c || c->op() != ops::broadcast_to || !all_unit_dims(c->args()[0]->type())) return nullptr;
  return c->args()[0];
}

// x's type with its last two dims swapped.
Shape swapped_shape(const Expr& x) {
  Shape shape = x->type()->shape();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return shape;
}

// T(x) for x with a unit dim among its last two, where a transpose only
// moves the unit dim: x itself when that changes nothing, z when x is bound
// to a reshape of z from the transposed shape, else a reshape.
Expr transpose_of_vector(const RewriteContext& ctx, const Expr& x) {
  Shape shape = swapped_shape(x);
  if (shape == x->type()->shape()) return x;
  const CallNode* r = ctx.bound_call(x, ops::reshape);
  if (r && r->args()[0]->type()->shape() == shape) return r->args()[0];
  return ctx.make(ops::reshape, {x}, {{"shape", shape}});
}

bool has_unit_matrix_dim(const Expr& x) {
  const Shape& shape = x->type()->shape();
  size_t n = shape.size();
  auto unit = [](const Dim& d) { return d.is_const() && d.value() == 1; };
  return n >= 2 && (unit(shape[n - 1]) || unit(shape[n - 2]));
}

// T(broadcast_to(x, shape)) -> broadcast_to(T(x), T(shape)), for x of the
// broadcast's rank that is a row or column in its last two dims (so T(x)
// moves no data).
Expr transpose_of_broadcast(const CallNode& call, const RewriteContext& ctx) {
  if (!is_transpose(&call)) return nullptr;
  const CallNode* bc = ctx.bound_call(call.args()[0], ops::broadcast_to);
  if (!bc) return nullptr;
  const Expr& x = bc->args()[0];
  if (x->type()->ndim() != call.type()->ndim() || !has_unit_matrix_dim(x)) return nullptr;
  return ctx.make(ops::broadcast_to, {transpose_of_vector(ctx, x)}, {{"shape", call.type()->shape()}});
}

// s * sum(x, axis=[axis], keepdims=True) for axis -1 or -2 (no multiply when
// s is bound to ones). When x is bound to T(y), y is summed over the other
// axis instead (no transpose runs) and the result moved into place by
// transpose_of_vector.
Expr scaled_sum(const RewriteContext& ctx, const Expr& x, int64_t axis, const Expr& s) {
  const CallNode* t = ctx.bound_call(x, ops::permute_dims);
  bool transposed = is_transpose(t);
  Expr source = transposed ? t->args()[0] : x;
  int64_t source_axis = transposed ? -3 - axis : axis;  // -1 <-> -2
  Expr sum = ctx.make(ops::sum, {source}, {{"axis", std::vector<int64_t>{source_axis}}, {"keepdims", true}});
  if (!ctx.bound_call(s, ops::ones)) sum = ctx.make(ops::multiply, {sum, s});
  return transposed ? transpose_of_vector(ctx, sum) : sum;
}

// matmul(a, b) where every element of a (or b) is the scalar s:
//   a == s: out[.., i, j] = s * sum_k b[.., k, j] -> broadcast_to(s * sum(b, axis=-2), out)
//   b == s: out[.., i, j] = s * sum_k a[.., i, k] -> broadcast_to(s * sum(a, axis=-1), out)
// for float operands of rank >= 2, no out_dtype cast, static shapes, at
// least kMinMatmulFlops.
Expr matmul_of_broadcast_scalar(const CallNode& call, const RewriteContext& ctx) {
  if (call.op() != ops::matmul) return nullptr;
  const Expr& a = call.args()[0];
  const Expr& b = call.args()[1];
  DType dtype = a->type()->dtype();
  if (a->type()->ndim() < 2 || b->type()->ndim() < 2 || !is_float(dtype) || call.type()->dtype() != dtype) return nullptr;
  Dim flops = call.op().flops(call);
  if (!flops.is_const() || flops.value() < kMinMatmulFlops) return nullptr;
  Expr sums;
  if (Expr s = broadcast_scalar(ctx, a)) {
    sums = scaled_sum(ctx, b, -2, s);
  } else if (Expr s = broadcast_scalar(ctx, b)) {
    sums = scaled_sum(ctx, a, -1, s);
  } else {
    return nullptr;
  }
  return ctx.make(ops::broadcast_to, {sums}, {{"shape", call.type()->shape()}});
}


const std::vector<RewriteRule>& simplify_gradient_rules() {
  static const std::vector<RewriteRule> rules = {
      {"fold_permutes", "permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q) | x", fold_permutes},
      {"drop_identity_permute", "permute_dims(x, identity) -> x", drop_identity_permute},
      {"transpose_of_matmul", "T(matmul(a, b)) -> matmul(T(b), T(a))", transpose_of_matmul},
      {"drop_identity_broadcast_to", "broadcast_to(x, shape of x) -> x", drop_identity<OpId::broadcast_to>},
      {"drop_identity_reshape", "reshape(x, shape of x) -> x", drop_identity<OpId::reshape>},
      {"drop_identity_collapse_sum_to", "collapse_sum_to(x, shape of x) -> x", drop_identity<OpId::collapse_sum_to>},
      {"drop_identity_astype", "astype(x, dtype of x) -> x", drop_identity<OpId::astype>},
      {"matmul_of_broadcast_scalar", "matmul(broadcast s, b) -> broadcast_to(s * sum(b, axis=-2)), and mirrored",
       matmul_of_broadcast_scalar},
      {"transpose_of_broadcast", "T(broadcast_to(x, shape)) -> broadcast_to(T(x), T(shape)), x a row or column",
       transpose_of_broadcast},
  };
  return rules;
}

}  // namespace

Function rewrite_simplify_gradient(const Function& fn, bool share_values) {
  return rewrite_bindings(fn, simplify_gradient_rules(), share_values);
}

Function simplify_gradient(const Function& fn) { return dead_code_elimination(rewrite_simplify_gradient(fn)); }

Module simplify_gradient(const Module& mod) {
  verify(mod);  // a malformed module is a VerifyError, not a failure inside a rule
  return dead_code_elimination(rewrite_bindings(mod, simplify_gradient_rules()));
}

}  // namespace aj
