// FunctionBuilder: A-normal-form emission with type inference and unique names.
#include "adjoint/ir/builder.h"

#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {

std::string FunctionBuilder::unique_name(const std::string& hint) {
  std::string base = hint.empty() ? "lv" : hint;
  if (!unique_names_ || names_.insert(base).second) return base;
  size_t& k = next_suffix_[base];  // resume where the last search for this hint stopped
  while (true) {
    std::string candidate = base + "_" + std::to_string(++k);
    if (names_.insert(candidate).second) return candidate;
  }
}

Var FunctionBuilder::add_param(const std::string& name, Type type) {
  if (!type) throw Error(str("param '", name, "' needs a type"));
  auto v = std::make_shared<VarNode>(unique_name(name), std::move(type));
  params_.push_back(v);
  return v;
}

Expr FunctionBuilder::normalize(const Expr& e) {
  if (is_leaf(e)) return e;
  if (auto* t = as<TupleNode>(e)) {
    std::vector<Expr> fields;
    fields.reserve(t->fields().size());
    for (const auto& f : t->fields()) fields.push_back(normalize(f));
    return std::make_shared<TupleNode>(std::move(fields));
  }
  return emit(e);
}

// Rebuilds a binding value so that its operands are leaves.
Expr FunctionBuilder::normalize_value(const Expr& value) {
  if (auto* c = as<CallNode>(value)) {
    bool all_leaves = true;
    for (const auto& a : c->args()) all_leaves = all_leaves && is_leaf(a);
    if (all_leaves) return value;
    std::vector<Expr> args;
    for (const auto& a : c->args()) args.push_back(normalize(a));
    return std::make_shared<CallNode>(&c->op(), std::move(args), c->attrs(), c->type());
  }
  if (auto* t = as<TupleNode>(value)) {
    if (is_leaf(value)) return value;
    std::vector<Expr> fields;
    for (const auto& f : t->fields()) fields.push_back(normalize(f));
    return std::make_shared<TupleNode>(std::move(fields));
  }
  if (auto* g = as<TupleGetItemNode>(value)) {
    if (is_leaf(g->tuple())) return value;
    return std::make_shared<TupleGetItemNode>(normalize(g->tuple()), g->index());
  }
  return value;
}

Var FunctionBuilder::emit(const Expr& value, const std::string& name_hint) {
  Expr v = normalize_value(value);
  auto var = std::make_shared<VarNode>(unique_name(name_hint), v->type());
  bindings_.push_back({var, std::move(v)});
  return var;
}

Var FunctionBuilder::emit_named(const Expr& value, const std::string& exact_name) {
  Expr v = normalize_value(value);
  if (unique_names_) names_.insert(exact_name);
  auto var = std::make_shared<VarNode>(exact_name, v->type());
  bindings_.push_back({var, std::move(v)});
  return var;
}

Var FunctionBuilder::emit_call(const OpDef& op, std::vector<Expr> args, Attrs attrs,
                               const std::string& name_hint) {
  for (auto& a : args) a = normalize(a);
  return emit(make_call(op, std::move(args), std::move(attrs)), name_hint);
}

Function FunctionBuilder::finish(const Expr& ret) {
  Expr r = normalize(ret);
  return std::make_shared<FunctionNode>(params_, std::move(bindings_), std::move(r), attrs_);
}

}  // namespace aj
