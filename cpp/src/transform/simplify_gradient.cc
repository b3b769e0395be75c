// SimplifyGradient (DESIGN.md §6): rules that turn what reverse mode emits
// around matmul and transposes into the forms a person would write, one row
// each in the table at the end of this file. The table is the one place the
// rules are described: SimplifyGradient.rules and the Python pass's
// docstring are read from it. "T" is permute_dims swapping the last two
// axes. Dead-code elimination then removes what the rewrites left unused.
//
// The matmul_of_broadcast_scalar rules are strength reduction: the seed of a
// sum or mean loss is a broadcast scalar, and every linear layer it reaches
// first multiplies it into two GEMMs whose rows (or columns) are all the
// same sum. They apply from kMinMatmulFlops: below that one matmul
// instruction runs faster than a sum and a broadcast (`python -m
// adjoint.bench passes` prints the crossover), and small adjoints keep the
// matmul forms of DESIGN.md §6.
#include "adjoint/ir/substitute.h"
#include "adjoint/op/linalg.h"
#include "adjoint/op/manipulate.h"
#include "adjoint/op/registry.h"
#include "adjoint/pattern/rule.h"
#include "adjoint/transform/passes.h"
#include "adjoint/transform/rewrite.h"

namespace aj {
namespace {

// The smallest matmul, in FLOPs (a 32x32x32 GEMM), that the
// matmul_of_broadcast_scalar rules turn into a sum.
constexpr int64_t kMinMatmulFlops = int64_t{1} << 16;

const CallNode& as_call(const ExprNode& e) { return static_cast<const CallNode&>(e); }

bool all_unit_dims(const Type& t) {
  for (const Dim& d : t->shape())
    if (!d.is_const() || d.value() != 1) return false;
  return true;
}

// x's type with its last two dims swapped.
Shape swapped_shape(const Expr& x) {
  Shape shape = x->type()->shape();
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return shape;
}

// ---- side conditions, on the value a pattern matched ----

bool identity_permutation(const ExprNode& e) { return is_identity_permutation(permute_dims_permutation(as_call(e))); }

bool swaps_last_two_axes(const ExprNode& e) { return is_transpose(&as_call(e)); }

bool rank_at_least_2(const ExprNode& e) { return e.type()->is_tensor() && e.type()->ndim() >= 2; }

// The call's result has its (first) argument's type: it changes nothing.
bool keeps_type(const ExprNode& e) { return type_equal(as_call(e).args()[0]->type(), e.type()); }

bool keeps_rank(const ExprNode& e) { return as_call(e).args()[0]->type()->ndim() == e.type()->ndim(); }

bool one_element(const ExprNode& e) { return e.type()->is_tensor() && all_unit_dims(e.type()); }

// A row or a column in its last two dims: its transpose moves no data.
bool row_or_column(const ExprNode& e) {
  const Shape& shape = e.type()->shape();
  size_t n = shape.size();
  auto unit = [](const Dim& d) { return d.is_const() && d.value() == 1; };
  return n >= 2 && (unit(shape[n - 1]) || unit(shape[n - 2]));
}

// A matmul of float operands of rank >= 2, with no out_dtype cast, static
// shapes, at least kMinMatmulFlops.
bool large_float_matmul(const ExprNode& e) {
  const CallNode& mm = as_call(e);
  if (mm.args()[0]->type()->ndim() < 2 || mm.args()[1]->type()->ndim() < 2) return false;
  DType dtype = mm.args()[0]->type()->dtype();
  if (!is_float(dtype) || e.type()->dtype() != dtype) return false;
  Dim flops = mm.op().flops(mm);
  return flops.is_const() && flops.value() >= kMinMatmulFlops;
}

// multiply(a, b) whose result has the type of its arg `keep` (0 or 1): the
// other factor only broadcasts into it.
template <int keep>
bool product_keeps_type_of(const ExprNode& e) { return type_equal(as_call(e).args()[keep]->type(), e.type()); }

// A binary call whose result has the type of its other arg than `source`
// (0 or 1): broadcasting that arg alone already gives the result's shape.
template <int source>
bool other_arg_has_result_type(const ExprNode& e) {
  return type_equal(as_call(e).args()[1 - source]->type(), e.type());
}

// ---- patterns ----

Pattern permute_dims_of(const Pattern& x) { return is_op(ops::permute_dims)({x}); }
Pattern transpose_of(const Pattern& x) { return permute_dims_of(x).where("swaps_last_two_axes", swaps_last_two_axes); }
Pattern matrix(const char* name) { return wildcard().named(name).where("rank_at_least_2", rank_at_least_2); }
// op(x) whose result has x's type.
Pattern identity_call(OpHandle op) { return is_op(op)({wildcard().named("x")}).where("keeps_type", keeps_type); }
// s when every element of the matched value is s: broadcast_to(s, shape), s
// of one element, or a permutation of one.
Pattern broadcast_scalar() {
  Pattern broadcast = is_op(ops::broadcast_to)({wildcard().named("s").where("one_element", one_element)});
  return broadcast | permute_dims_of(broadcast);
}
// A broadcasting binary arithmetic op (where a broadcast operand need not be materialized).
Pattern broadcasting_binary(const Pattern& a, const Pattern& b) {
  Pattern out = is_op(ops::add)({a, b});
  for (OpHandle op : {ops::subtract, ops::multiply, ops::divide, ops::power, ops::maximum, ops::minimum})
    out = out | is_op(op)({a, b});
  return out;
}
Pattern large_matmul(const Pattern& a, const Pattern& b) {
  return is_op(ops::matmul)({a, b}).where("large_float_matmul", large_float_matmul);
}

// ---- building replacements ----


// T(x) for x with a unit dim among its last two, where a transpose only
// moves the unit dim: x itself when that changes nothing, z when x is bound
// to a reshape of z from the transposed shape, else a reshape.
Expr transpose_of_vector(const Match& m, const Expr& x) {
  Shape shape = swapped_shape(x);
  if (shape == x->type()->shape()) return x;
  const CallNode* r = m.call(x);
  if (is_call_of(r, ops::reshape) && r->args()[0]->type()->shape() == shape) return r->args()[0];
  return ops::reshape({x}, {{"shape", shape}});
}

// s * sum(x, axis=[axis], keepdims=True) for axis -1 or -2 (no multiply when
// s is bound to ones). When x is bound to T(y), y is summed over the other
// axis instead (no transpose runs) and the result moved into place by
// transpose_of_vector.
Expr scaled_sum(const Match& m, const Expr& x, int64_t axis) {
  const CallNode* t = m.call(x);
  bool transposed = is_transpose(t);
  Expr source = transposed ? t->args()[0] : x;
  int64_t source_axis = transposed ? -3 - axis : axis;  // -1 <-> -2
  Expr sum = ops::sum({source}, {{"axis", std::vector<int64_t>{source_axis}}, {"keepdims", true}});
  if (!is_call_of(m.call("s"), ops::ones)) sum = ops::multiply({sum, m["s"]});
  return transposed ? transpose_of_vector(m, sum) : sum;
}

const Shape& root_shape(const Match& m) { return m.root()->type()->shape(); }

// The matched binary call with its arg `source` (0 or 1) replaced by what
// that arg broadcast ("s").
template <int source>
Expr without_broadcast(const Match& m) {
  const CallNode& call = *m.call(m.root());
  std::vector<Expr> args = call.args();
  args[source] = m["s"];
  return make_call(call.op(), std::move(args), call.attrs());
}

// ---- replacements ----

Expr x_itself(const Match& m) { return m["x"]; }

Expr composed_permutation(const Match& m) {
  std::vector<int64_t> p = permute_dims_permutation(*m.call("inner"));
  std::vector<int64_t> q = permute_dims_permutation(*m.call(m.root())), pq(q.size());
  for (size_t i = 0; i < q.size(); ++i) pq[i] = p[static_cast<size_t>(q[i])];
  return is_identity_permutation(pq) ? m["x"] : make_permute_dims(m["x"], pq);
}

Expr swapped_matmul(const Match& m) {
  const CallNode& mm = *m.call("mm");
  std::optional<DType> out_dtype = matmul_out_dtype(mm);
  KwAttrs attrs;
  if (out_dtype) attrs.push_back({"out_dtype", *out_dtype});
  // T(b), T(a); the rewriter then cancels each against a transpose it is bound to.
  return ops::matmul({make_transpose(m["b"]), make_transpose(m["a"])}, attrs);
}

// matmul(s, b)[.., i, j] = s * sum_k b[.., k, j]
Expr broadcast_column_sums(const Match& m) {
  return ops::broadcast_to({scaled_sum(m, m["b"], -2)}, {{"shape", root_shape(m)}});
}

// matmul(a, s)[.., i, j] = s * sum_k a[.., i, k]
Expr broadcast_row_sums(const Match& m) {
  return ops::broadcast_to({scaled_sum(m, m["a"], -1)}, {{"shape", root_shape(m)}});
}

Expr broadcast_of_transpose(const Match& m) {
  return ops::broadcast_to({transpose_of_vector(m, m["x"])}, {{"shape", root_shape(m)}});
}

// The rules, tried in this order on each call of their root op. A row:
// name, "before -> after" (with its side conditions), the pattern of the
// call it rewrites, the replacement.
RuleSet make_rules() {
  Pattern x = wildcard().named("x");
  return RuleSet({
      {"fold_permutes", "permute_dims(permute_dims(x, p), q) -> permute_dims(x, p.q), or x when p.q is the identity",
       permute_dims_of(permute_dims_of(x).named("inner")), composed_permutation},
      {"drop_identity_permute", "permute_dims(x, identity) -> x",
       permute_dims_of(x).where("identity_permutation", identity_permutation), x_itself},
      {"transpose_of_matmul", "T(matmul(a, b)) -> matmul(T(b), T(a)), a and b of rank >= 2",
       transpose_of(is_op(ops::matmul)({matrix("a"), matrix("b")}).named("mm")), swapped_matmul},
      {"drop_identity_broadcast_to", "broadcast_to(x, shape of x) -> x",
       identity_call(ops::broadcast_to), x_itself},
      {"drop_identity_reshape", "reshape(x, shape of x) -> x",
       identity_call(ops::reshape), x_itself},
      {"drop_identity_collapse_sum_to", "collapse_sum_to(x, shape of x) -> x",
       identity_call(ops::collapse_sum_to), x_itself},
      {"drop_identity_astype", "astype(x, dtype of x) -> x",
       identity_call(ops::astype), x_itself},
      {"matmul_of_broadcast_scalar_lhs", "matmul(broadcast_to(s), b) -> broadcast_to(s * sum(b, axis=-2, keepdims=True)), "
                                         "s of one element, float operands of rank >= 2, from 2 * 32^3 FLOPs",
       large_matmul(broadcast_scalar(), wildcard().named("b")), broadcast_column_sums},
      {"matmul_of_broadcast_scalar_rhs", "matmul(a, broadcast_to(s)) -> broadcast_to(s * sum(a, axis=-1, keepdims=True)), "
                                         "s of one element, float operands of rank >= 2, from 2 * 32^3 FLOPs",
       large_matmul(wildcard().named("a"), broadcast_scalar()), broadcast_row_sums},
      {"transpose_of_broadcast", "T(broadcast_to(x, shape)) -> broadcast_to(T(x), T(shape)), x a row or column of the same rank",
       transpose_of(is_op(ops::broadcast_to)({x.where("row_or_column", row_or_column)}).where("keeps_rank", keeps_rank)),
       broadcast_of_transpose},
      {"multiply_by_ones_lhs", "multiply(ones(shape), x) -> x, the product of x's type",
       is_op(ops::multiply)({is_op(ops::ones)({}), x}).where("product_keeps_type_of_x", product_keeps_type_of<1>), x_itself},
      {"multiply_by_ones_rhs", "multiply(x, ones(shape)) -> x, the product of x's type",
       is_op(ops::multiply)({x, is_op(ops::ones)({})}).where("product_keeps_type_of_x", product_keeps_type_of<0>), x_itself},
      {"binary_of_broadcast_lhs", "op(broadcast_to(s, shape), y) -> op(s, y), y of the result's type, "
                                  "op add, subtract, multiply, divide, power, maximum or minimum",
       broadcasting_binary(is_op(ops::broadcast_to)({wildcard().named("s")}), wildcard())
           .where("other_arg_has_result_type", other_arg_has_result_type<0>),
       without_broadcast<0>},
      {"binary_of_broadcast_rhs", "op(y, broadcast_to(s, shape)) -> op(y, s), y of the result's type, "
                                  "op add, subtract, multiply, divide, power, maximum or minimum",
       broadcasting_binary(wildcard(), is_op(ops::broadcast_to)({wildcard().named("s")}))
           .where("other_arg_has_result_type", other_arg_has_result_type<1>),
       without_broadcast<1>},
  });
}

}  // namespace

const RuleSet& simplify_gradient_rules() {
  static const RuleSet rules = make_rules();
  return rules;
}

Function rewrite_simplify_gradient(const Function& fn, bool share_values) {
  return rewrite_bindings(fn, simplify_gradient_rules(), {share_values});
}

Function simplify_gradient(const Function& fn) { return dead_code_elimination(rewrite_simplify_gradient(fn)); }

Module simplify_gradient(const Module& mod) {
  return map_functions(mod, [](const Function& fn) { return simplify_gradient(fn); });
}

}  // namespace aj
