// FLOP costs of forms and the choice between them (transform/form_cost.h).
#include "adjoint/transform/form_cost.h"

#include "adjoint/analysis/compile_time.h"
#include "adjoint/op/registry.h"

namespace aj {

FormCost::FormCost(const DataflowIndex& index, const DimBounds& bounds)
    : weight_symbols_(weight_symbols(index.function())), bounds_(bounds) {
  const FunctionNode& fn = index.function();
  for (size_t p = fn.num_input(); p < fn.params().size(); ++p) computable_vars_.insert(fn.params()[p].get());
  std::vector<uint8_t> computable = computable_bindings(index);
  for (size_t b = 0; b < computable.size(); ++b)
    if (computable[b]) computable_vars_.insert(fn.bindings()[b].var.get());
}

bool FormCost::computable(const Expr& form) const {
  switch (form->kind()) {
    case ExprKind::kVar:
      return computable_vars_.count(static_cast<const VarNode*>(form.get())) != 0;
    case ExprKind::kCall:
      if (!fixed_by_weights(*form->type())) return false;
      for (const Expr& arg : static_cast<const CallNode&>(*form).args())
        if (!computable(arg)) return false;
      return true;
    case ExprKind::kConstant:
      return true;
    default:
      return false;
  }
}

bool FormCost::fixed_by_weights(const TypeNode& type) const { return symbols_within(type, weight_symbols_); }

Dim FormCost::cost(const Expr& form) const {
  std::unordered_set<const ExprNode*> counted;
  return cost(form, counted);
}

Dim FormCost::cost(const Expr& form, std::unordered_set<const ExprNode*>& counted) const {
  const auto* call = as<CallNode>(form);
  if (!call || !counted.insert(call).second || computable(form)) return Dim(0);
  Dim total = call->op().flops ? call->op().flops(*call) : Dim(0);
  for (const Expr& arg : call->args()) total = total + cost(arg, counted);
  return total;
}

std::optional<size_t> FormCost::choose(const Dim& input, const std::vector<Dim>& alternatives) const {
  std::vector<size_t> cheaper;
  for (size_t i = 0; i < alternatives.size(); ++i)
    if (compare(alternatives[i], input, bounds_) == Ordering::kLessEqual) cheaper.push_back(i);
  for (size_t i : cheaper) {
    bool no_costlier = true;
    for (size_t j : cheaper) {
      Ordering o = compare(alternatives[i], alternatives[j], bounds_);
      no_costlier = no_costlier && (o == Ordering::kLessEqual || o == Ordering::kEqual);
    }
    if (no_costlier) return i;
  }
  if (cheaper.empty()) return std::nullopt;
  return cheaper.front();
}

bool same_form(const Expr& a, const Expr& b) {
  if (a == b) return true;
  const auto* ca = as<CallNode>(a);
  const auto* cb = as<CallNode>(b);
  if (!ca || !cb || &ca->op() != &cb->op() || ca->args().size() != cb->args().size()) return false;
  for (size_t i = 0; i < ca->attrs().size(); ++i)
    if (!attr_equal(ca->attrs()[i], cb->attrs()[i])) return false;
  for (size_t i = 0; i < ca->args().size(); ++i)
    if (!same_form(ca->args()[i], cb->args()[i])) return false;
  return true;
}

Expr expand_form(const Expr& root, const std::unordered_set<const VarNode*>& inner, const DataflowIndex& index) {
  const auto* var = as<VarNode>(root);
  if (var && inner.count(var)) return expand_form(*index.value(var), inner, index);
  const auto* call = as<CallNode>(root);
  if (!call) return root;
  std::vector<Expr> args;
  args.reserve(call->args().size());
  for (const Expr& arg : call->args()) args.push_back(expand_form(arg, inner, index));
  return std::make_shared<CallNode>(&call->op(), std::move(args), call->attrs(), call->type());
}

}  // namespace aj
