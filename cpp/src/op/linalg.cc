// Linear algebra: matmul with NumPy semantics (1-D operands, batched with
// broadcast batch dims) and an optional out_dtype.
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
Dim matmul_flops(const CallNode& call) {
  const Shape& a = call.args()[0]->type()->shape();
  return Dim(2) * num_elements(call.type()->shape()) * a.back();
}

}  // namespace

void register_linalg_ops(OpRegistry& reg) {
  reg.define("matmul").set_family("linalg").set_args({"x1", "x2"})
      .add_attr("out_dtype", AttrKind::kOptDType, NoneValue{})
      .set_type_rule(matmul_type).set_flops(matmul_flops);
}

}  // namespace aj
