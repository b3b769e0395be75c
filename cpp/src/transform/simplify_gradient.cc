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
// Then dead-code elimination removes what the rewrites left unused.
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

bool is_transpose(const CallNode* c) { return c && c->op().name == "permute_dims" && swaps_last_two(permutation(*c)); }

// permute_dims(x, p) in canonical form: no axes for a full reversal of rank 2.
Expr permute(const RewriteContext& ctx, const Expr& x, const std::vector<int64_t>& p) {
  if (p.size() == 2 && p[0] == 1 && p[1] == 0) return ctx.make("permute_dims", {x});
  return ctx.make("permute_dims", {x}, {{"axes", p}});
}

// T(x), or y when x is bound to T(y).
Expr transpose(const RewriteContext& ctx, const Expr& x) {
  const CallNode* c = ctx.bound_call(x, "permute_dims");
  if (is_transpose(c)) return c->args()[0];
  std::vector<int64_t> p(x->type()->ndim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[p.size() - 1], p[p.size() - 2]);
  return permute(ctx, x, p);
}

// permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q), or x
Expr fold_permutes(const CallNode& call, const RewriteContext& ctx) {
  if (call.op().name != "permute_dims") return nullptr;
  const CallNode* inner = ctx.bound_call(call.args()[0], "permute_dims");
  if (!inner) return nullptr;
  std::vector<int64_t> p = permutation(*inner), q = permutation(call), pq(q.size());
  for (size_t i = 0; i < q.size(); ++i) pq[i] = p[q[i]];
  if (is_identity(pq)) return inner->args()[0];
  return permute(ctx, inner->args()[0], pq);
}

// permute_dims(x, identity) -> x
Expr drop_identity_permute(const CallNode& call, const RewriteContext&) {
  if (call.op().name != "permute_dims" || !is_identity(permutation(call))) return nullptr;
  return call.args()[0];
}

// T(matmul(a, b)) -> matmul(T(b), T(a)), for operands of rank >= 2
Expr transpose_of_matmul(const CallNode& call, const RewriteContext& ctx) {
  if (!is_transpose(&call)) return nullptr;
  const CallNode* mm = ctx.bound_call(call.args()[0], "matmul");
  if (!mm || mm->args()[0]->type()->ndim() < 2 || mm->args()[1]->type()->ndim() < 2) return nullptr;
  const AttrValue& out_dtype = mm->attrs()[0];
  Expr tb = transpose(ctx, mm->args()[1]), ta = transpose(ctx, mm->args()[0]);
  return ctx.make("matmul", {tb, ta}, {{"out_dtype", out_dtype}});
}

// An op whose result equals its input when shapes (or dtypes) already match.
template <const char* Op>
Expr drop_identity(const CallNode& call, const RewriteContext&) {
  if (call.op().name != Op) return nullptr;
  const Expr& x = call.args()[0];
  return type_equal(x->type(), call.type()) ? x : nullptr;
}

constexpr char kBroadcastTo[] = "broadcast_to";
constexpr char kReshape[] = "reshape";
constexpr char kCollapseSumTo[] = "collapse_sum_to";
constexpr char kAsType[] = "astype";

const std::vector<RewriteRule>& simplify_gradient_rules() {
  static const std::vector<RewriteRule> rules = {
      {"fold_permutes", "permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q) | x", fold_permutes},
      {"drop_identity_permute", "permute_dims(x, identity) -> x", drop_identity_permute},
      {"transpose_of_matmul", "T(matmul(a, b)) -> matmul(T(b), T(a))", transpose_of_matmul},
      {"drop_identity_broadcast_to", "broadcast_to(x, shape of x) -> x", drop_identity<kBroadcastTo>},
      {"drop_identity_reshape", "reshape(x, shape of x) -> x", drop_identity<kReshape>},
      {"drop_identity_collapse_sum_to", "collapse_sum_to(x, shape of x) -> x", drop_identity<kCollapseSumTo>},
      {"drop_identity_astype", "astype(x, dtype of x) -> x", drop_identity<kAsType>},
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
