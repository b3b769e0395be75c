// The binding rewriter (transform/rewrite.h): one round copies the function
// through a FunctionBuilder, replacing each call a rule matches; rounds
// repeat until one changes nothing.
#include "adjoint/transform/rewrite.h"

#include "adjoint/ir/builder.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/support/error.h"

namespace aj {

const CallNode* RewriteContext::bound_call(const Expr& e) const {
  auto* v = as<VarNode>(e);
  if (!v) return nullptr;
  auto it = defs_.find(v);
  return it == defs_.end() ? nullptr : it->second;
}

const CallNode* RewriteContext::bound_call(const Expr& e, const char* op) const {
  const CallNode* c = bound_call(e);
  return c && c->op().name == op ? c : nullptr;
}

Expr RewriteContext::make(const std::string& op, std::vector<Expr> args,
                          const std::vector<std::pair<std::string, AttrValue>>& attrs) const {
  const OpDef& def = OpRegistry::global().get(op);
  return make_call(def, std::move(args), resolve_attrs(def, {}, attrs));
}

namespace {

class RewriteRound {
 public:
  RewriteRound(const FunctionNode& fn, const std::vector<RewriteRule>& rules)
      : fn_(fn), rules_(rules), bb_(fn.attrs()), ctx_(defs_) {}

  Function run() {
    for (const auto& p : fn_.params()) map_[p.get()] = bb_.add_param(p->name_hint(), p->type());
    bb_.reserve(fn_.bindings().size());
    for (const auto& b : fn_.bindings()) rewrite(b);
    return bb_.finish(remap(fn_.ret()));
  }

  bool changed() const { return changed_; }

 private:
  Expr remap(const Expr& e) { return substitute(e, map_, /*keep_unmapped=*/false); }

  Expr apply_rules(const Expr& value) {
    auto* call = as<CallNode>(value);
    if (!call) return nullptr;
    for (const auto& rule : rules_) {
      Expr out = rule.apply(*call, ctx_);
      if (!out) continue;
      if (!type_equal(out->type(), value->type()))
        throw Error(str("rewrite rule '", rule.name, "' changed a type from ", value->type()->to_string(), " to ",
                        out->type()->to_string()));
      return out;
    }
    return nullptr;
  }

  void rewrite(const Binding& b) {
    Expr value = remap(b.value);
    Expr replaced = apply_rules(value);
    if (replaced) {
      changed_ = true;
      value = replaced;
      if (is_leaf(value) && value->kind() != ExprKind::kTuple) {
        map_[b.var.get()] = value;
        return;
      }
    }
    size_t before = bb_.bindings().size();
    Var v = bb_.emit(value, b.var->name_hint());
    for (size_t i = before; i < bb_.bindings().size(); ++i) {
      const Binding& nb = bb_.bindings()[i];
      if (auto* c = as<CallNode>(nb.value)) defs_[nb.var.get()] = c;
    }
    map_[b.var.get()] = v;
  }

  const FunctionNode& fn_;
  const std::vector<RewriteRule>& rules_;
  FunctionBuilder bb_;
  VarMap map_;
  std::unordered_map<const VarNode*, const CallNode*> defs_;
  RewriteContext ctx_;
  bool changed_ = false;
};

}  // namespace

Function rewrite_bindings(const Function& fn, const std::vector<RewriteRule>& rules, int max_rounds) {
  Function cur = fn;
  for (int round = 0; round < max_rounds; ++round) {
    RewriteRound r(*cur, rules);
    Function next = r.run();
    if (!r.changed()) return cur;
    cur = next;
  }
  return cur;
}

Module rewrite_bindings(const Module& mod, const std::vector<RewriteRule>& rules, int max_rounds) {
  return map_functions(mod, [&](const Function& fn) { return rewrite_bindings(fn, rules, max_rounds); });
}

}  // namespace aj
