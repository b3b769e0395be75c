// The binding rewriter (transform/rewrite.h): one pass over the bindings in
// order keeps each binding no rule touches as it is, and simplifies each call
// that a rule matches (and each call of its replacement, bottom-up) before
// binding it, reusing the binding's var for the result. Rules look only at a
// call and at earlier bindings, which are final by then, so one round
// reaches the fixed point.
#include "adjoint/transform/rewrite.h"

#include "adjoint/ir/substitute.h"
#include "adjoint/transform/common_values.h"
#include "adjoint/support/error.h"

namespace aj {

const CallNode* RewriteContext::bound_call(const Expr& e) const {
  auto* v = as<VarNode>(e);
  const RewriteVar* r = v ? vars_.find(v) : nullptr;
  return r ? r->call : nullptr;
}

const CallNode* RewriteContext::bound_call(const Expr& e, OpHandle op) const {
  const CallNode* c = bound_call(e);
  return is_call_of(c, op) ? c : nullptr;
}

Expr RewriteContext::make(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs) const {
  return op(std::move(args), attrs);
}

namespace {

class RewriteRound {
 public:
  RewriteRound(const FunctionNode& fn, const std::vector<RewriteRule>& rules, bool share_values)
      : fn_(fn), rules_(rules), vars_(fn), ctx_(vars_), share_(share_values),
        seen_(share_values ? fn.bindings().size() : 0, out_) {}

  Function run() {
    out_.reserve(fn_.bindings().size());
    for (const auto& b : fn_.bindings()) rewrite(b);
    if (!changed_) return nullptr;
    return std::make_shared<FunctionNode>(fn_.params(), std::move(out_), substitute(fn_.ret(), replacement()), fn_.attrs());
  }

 private:
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

  // The var that stands for `value` from here on: when sharing values, the
  // var of an earlier binding of an equal value (nothing is bound); else `v`,
  // or a fresh var when v is null, bound to value.
  Var bind(const Var& v, const Expr& value) {
    size_t key = 0;
    if (share_) {
      key = cse::value_key(value);
      if (Var earlier = seen_.find(key, value)) {
        changed_ = true;
        return earlier;
      }
      seen_.insert(key, out_.size());
    }
    Var var = v ? v : std::make_shared<VarNode>("lv", value->type());
    out_.push_back({var, value});
    auto* c = as<CallNode>(value);
    if (!v) vars_.add(var.get(), RewriteVar{nullptr, c});
    else if (c) entry(var.get()).call = c;
    return var;
  }

  RewriteVar& entry(const VarNode* v) {
    if (RewriteVar* r = vars_.find(v)) return *r;
    vars_.set(v, RewriteVar{});
    return *vars_.find(v);
  }

  struct Replacement {
    const VarTable<RewriteVar>& vars;
    const Expr* operator()(const VarNode* v) const {
      const RewriteVar* r = vars.find(v);
      return r ? &r->replaced : nullptr;
    }
  };
  Replacement replacement() const { return {vars_}; }

  // The leaf that stands for `e` once bound: nested calls are bound first,
  // bottom-up, each simplified by the rules before it is bound, so the
  // result is at a fixed point. The root is bound to `root` when given
  // (the binding's own var: same type), nested calls to new vars.
  Expr bind_simplified(const Expr& e, const Var& root, int depth) {
    if (depth > kMaxDepth) throw Error("rewrite rules did not reach a fixed point (a rule keeps firing)");
    if (auto* t = as<TupleNode>(e)) {
      std::vector<Expr> fields;
      for (const auto& f : t->fields()) fields.push_back(bind_simplified(f, nullptr, depth + 1));
      return std::make_shared<TupleNode>(std::move(fields));
    }
    auto* call = as<CallNode>(e);
    if (!call) return e;
    std::vector<Expr> args;
    bool nested = false;
    for (const auto& a : call->args()) {
      args.push_back(bind_simplified(a, nullptr, depth + 1));
      nested = nested || args.back() != a;
    }
    Expr value = nested ? std::make_shared<CallNode>(&call->op(), std::move(args), call->attrs(), call->type()) : e;
    if (Expr replaced = apply_rules(value)) {
      changed_ = true;
      return bind_simplified(replaced, root, depth + 1);
    }
    return bind(root, value);
  }

  // Unchanged bindings are kept as they are (same var, same value).
  void rewrite(const Binding& b) {
    Expr value = substitute(b.value, replacement());
    Expr leaf = value->kind() == ExprKind::kCall ? bind_simplified(value, b.var, 0) : Expr(bind(b.var, value));
    if (leaf != b.var) entry(b.var.get()).replaced = leaf;
  }

  static constexpr int kMaxDepth = 256;

  const FunctionNode& fn_;
  const std::vector<RewriteRule>& rules_;
  std::vector<Binding> out_;
  VarTable<RewriteVar> vars_;           // the function's vars and those made here
  RewriteContext ctx_;
  bool share_;                          // bind equal values once (common-subexpression elimination)
  cse::SeenValues seen_;                // with share_: the values bound so far, by content
  bool changed_ = false;
};

}  // namespace

Function rewrite_bindings(const Function& fn, const std::vector<RewriteRule>& rules, bool share_values) {
  Function out = RewriteRound(*fn, rules, share_values).run();
  return out ? out : fn;
}

Module rewrite_bindings(const Module& mod, const std::vector<RewriteRule>& rules) {
  return map_functions(mod, [&](const Function& fn) { return rewrite_bindings(fn, rules); });
}

}  // namespace aj
