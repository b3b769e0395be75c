// The binding rewriter (transform/rewrite.h). A round is one walk over the
// bindings that keeps a table of what each var is bound to in the function
// being built (the matcher's view of it, through the Bindings interface)
// and what stands for each var rewritten away.
#include "adjoint/transform/rewrite.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <utility>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/fresh_names.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/op/registry.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/common_values.h"
#include "adjoint/transform/pass_stats.h"

namespace aj {
namespace {

// What a round knows of each var: the leaf that now stands for it (when it
// was rewritten away) and the value it is bound to in the function built.
struct RewriteVar {
  Expr replaced;
  const ExprNode* value = nullptr;  // kept alive by the input function or the bindings built
};

// The rule names among the last rewrites of a binding, each once.
std::string still_firing(const std::vector<const Rule*>& fired) {
  std::vector<const std::string*> names;
  size_t from = fired.size() > 16 ? fired.size() - 16 : 0;
  for (size_t i = from; i < fired.size(); ++i)
    if (std::none_of(names.begin(), names.end(), [&](const std::string* n) { return *n == fired[i]->name; }))
      names.push_back(&fired[i]->name);
  std::string out;
  for (const std::string* n : names) out += (out.empty() ? "" : ", ") + *n;
  return out;
}

class RewriteRound final : public Bindings {
 public:
  RewriteRound(const FunctionNode& fn, const RuleSet& rules, bool share_values)
      : fn_(fn), rules_(rules), vars_(fn), names_(fn), matcher_(*this), share_(share_values),
        seen_(share_values ? fn.bindings().size() : 0, out_) {}

  // The rewritten function, or nullptr when nothing changed.
  Function run() {
    out_.reserve(fn_.bindings().size());
    for (const auto& b : fn_.bindings()) rewrite(b);
    if (!changed_) return nullptr;
    return std::make_shared<FunctionNode>(fn_.params(), std::move(out_), substitute(fn_.ret(), replacement()),
                                          fn_.attrs());
  }

  // Whether a rule read a use count: later rewrites change those, so the
  // next round may match where this one did not.
  bool read_use_counts() const { return users_ != nullptr; }
  // Every rule that fired, in order (for the message when rounds do not converge).
  const std::vector<const Rule*>& fired() const { return fired_; }

  const ExprNode* bound_value(const VarNode* v) const override {
    const RewriteVar* r = vars_.find(v);
    return r ? r->value : nullptr;
  }

  // Users in the function as this round found it; a var the round made has
  // the one use it was made for.
  size_t num_users(const VarNode* v) const override {
    if (!users_) users_ = std::make_unique<DataflowIndex>(fn_);
    return users_->def_kind(v) == DefKind::kUndefined ? 1 : users_->num_users(v);
  }

 private:
  // The replacement of the first rule that rewrites `value` (to be bound
  // to `root` when given), or nullptr.
  Expr apply_rules(const Expr& value, const Var& root) {
    auto* call = as<CallNode>(value);
    if (!call) return nullptr;
    for (uint32_t i : rules_.rules_for(call->op().id)) {
      const Rule& rule = rules_.rules()[i];
      if (!matcher_.match(rule.pattern, value)) continue;
      Expr out = replace(rule, value);
      if (!out || (root && out.get() == root.get()) || written_alike(out.get(), value.get(), 0)) continue;
      if (!type_equal(out->type(), value->type()))
        throw TypeInferenceError(str("rule '", rule.name, "' at binding '", binding_->name_hint(),
                                     "': the replacement has type ", out->type()->to_string(),
                                     ", the value it replaces ", value->type()->to_string()));
      fired_.push_back(&rule);
      count_pass_stat(rule.name);
      return out;
    }
    return nullptr;
  }

  // Whether `a` (a replacement) is `b` written alike, seen through the
  // bindings of this round: the same node, or calls, tuples and items
  // written alike, a var standing for the value it is bound to (exp(log(x))
  // is exp(l) when l = log(x)). A rule giving that back rewrites nothing.
  bool written_alike(const ExprNode* a, const ExprNode* b, int depth) const {
    if (a == b) return true;
    if (!a || !b || depth > kMaxDepth) return false;
    if (a->kind() == ExprKind::kVar && b->kind() != ExprKind::kVar)
      return written_alike(bound_value(static_cast<const VarNode*>(a)), b, depth + 1);
    if (b->kind() == ExprKind::kVar && a->kind() != ExprKind::kVar)
      return written_alike(a, bound_value(static_cast<const VarNode*>(b)), depth + 1);
    if (a->kind() != b->kind()) return false;
    switch (a->kind()) {
      case ExprKind::kCall: {
        const auto &ca = static_cast<const CallNode&>(*a), &cb = static_cast<const CallNode&>(*b);
        if (&ca.op() != &cb.op() || ca.args().size() != cb.args().size() || ca.attrs().size() != cb.attrs().size())
          return false;
        for (size_t i = 0; i < ca.attrs().size(); ++i)
          if (!attr_equal(ca.attrs()[i], cb.attrs()[i])) return false;
        return all_written_alike(ca.args(), cb.args(), depth);
      }
      case ExprKind::kTuple:
        return all_written_alike(static_cast<const TupleNode&>(*a).fields(), static_cast<const TupleNode&>(*b).fields(),
                                 depth);
      case ExprKind::kTupleGetItem: {
        const auto &ia = static_cast<const TupleGetItemNode&>(*a), &ib = static_cast<const TupleGetItemNode&>(*b);
        return ia.index() == ib.index() && written_alike(ia.tuple().get(), ib.tuple().get(), depth + 1);
      }
      default:
        return false;  // two vars, or constants not the same node
    }
  }

  bool all_written_alike(const std::vector<Expr>& a, const std::vector<Expr>& b, int depth) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!written_alike(a[i].get(), b[i].get(), depth + 1)) return false;
    return true;
  }

  // What rule's replacement gives; a TypeInferenceError it raises (a value
  // that is no expr) is reported with the rule and the binding.
  Expr replace(const Rule& rule, const Expr& value) {
    try {
      return rule.replacement(matcher_.result());
    } catch (const TypeInferenceError& e) {
      throw TypeInferenceError(str("rule '", rule.name, "' at binding '", binding_->name_hint(), "': ", e.what()));
    }
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
        count_pass_stat("bindings merged");
        return earlier;
      }
      seen_.insert(key, out_.size());
    }
    Var var = v ? v : std::make_shared<VarNode>(names_.next(), value->type());
    out_.push_back({var, value});
    if (!v) vars_.add(var.get(), RewriteVar{nullptr, value.get()});
    else entry(var.get()).value = value.get();
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

  [[noreturn]] void fail_to_converge(const char* why) const {
    std::vector<const Rule*> here(fired_.begin() + static_cast<std::ptrdiff_t>(fired_before_binding_), fired_.end());
    throw TransformError(str("rewrite rules did not reach a fixed point at binding '", binding_->name_hint(), "' (",
                             why, "); still firing: ", still_firing(here)));
  }

  // The leaf that stands for `e` once bound: nested calls are bound first,
  // bottom-up, each simplified by the rules before it is bound, so the
  // result is at a fixed point. The root is bound to `root` when given
  // (the binding's own var: same type), nested calls to new vars. A nested
  // expr object a replacement uses twice is bound once.
  Expr bind_simplified(const Expr& e, const Var& root, int depth) {
    if (root || e->kind() == ExprKind::kVar || e->kind() == ExprKind::kConstant)
      return bind_simplified_once(e, root, depth);
    auto [it, fresh] = nested_.try_emplace(e.get());
    if (!fresh) return it->second.second;
    Expr leaf = bind_simplified_once(e, root, depth);
    nested_[e.get()] = {e, leaf};
    return leaf;
  }

  Expr bind_simplified_once(const Expr& e, const Var& root, int depth) {
    if (depth > kMaxDepth) fail_to_converge("replacements nest too deep");
    if (auto* t = as<TupleNode>(e)) {
      std::vector<Expr> fields;
      for (const auto& f : t->fields()) fields.push_back(bind_simplified(f, nullptr, depth + 1));
      return std::make_shared<TupleNode>(std::move(fields));
    }
    if (auto* item = as<TupleGetItemNode>(e)) return bind_item(*item, root, depth);
    auto* call = as<CallNode>(e);
    if (!call) return e;
    std::vector<Expr> args;
    bool nested = false;
    for (const auto& a : call->args()) {
      args.push_back(bind_simplified(a, nullptr, depth + 1));
      nested = nested || args.back() != a;
    }
    Expr value = nested ? std::make_shared<CallNode>(&call->op(), std::move(args), call->attrs(), call->type()) : e;
    if (Expr replaced = apply_rules(value, root)) {
      changed_ = true;
      if (fired_.size() - fired_before_binding_ > kMaxRewritesPerBinding) fail_to_converge("too many rewrites");
      return bind_simplified(replaced, root, depth + 1);
    }
    return bind(root, value);
  }

  // An item of a tuple a replacement builds: the tuple is bound first; an
  // item of a literal tuple is that field, an item of a bound tuple is bound.
  Expr bind_item(const TupleGetItemNode& item, const Var& root, int depth) {
    Expr tuple = bind_simplified(item.tuple(), nullptr, depth + 1);
    if (auto* t = as<TupleNode>(tuple)) return t->fields()[static_cast<size_t>(item.index())];
    return bind(root, std::make_shared<TupleGetItemNode>(tuple, item.index()));
  }

  // Unchanged bindings are kept as they are (same var, same value).
  void rewrite(const Binding& b) {
    binding_ = b.var.get();
    fired_before_binding_ = fired_.size();
    nested_.clear();
    Expr value = substitute(b.value, replacement());
    Expr leaf = value->kind() == ExprKind::kCall ? bind_simplified(value, b.var, 0) : Expr(bind(b.var, value));
    if (leaf != b.var) entry(b.var.get()).replaced = leaf;
  }

  static constexpr int kMaxDepth = 256;
  static constexpr size_t kMaxRewritesPerBinding = 1024;

  const FunctionNode& fn_;
  const RuleSet& rules_;
  std::vector<Binding> out_;
  VarTable<RewriteVar> vars_;  // the function's vars and those made here
  FreshNames names_;           // for the vars made here
  Matcher matcher_;            // sees vars_ through this round's Bindings
  bool share_;                 // bind equal values once (common-subexpression elimination)
  cse::SeenValues seen_;       // with share_: the values bound so far, by content
  bool changed_ = false;
  const VarNode* binding_ = nullptr;  // the binding being rewritten (for messages)
  std::vector<const Rule*> fired_;
  size_t fired_before_binding_ = 0;
  mutable std::unique_ptr<DataflowIndex> users_;  // built when a rule first reads a use count
  // The nested exprs of the binding being rewritten, each with the leaf it
  // was bound to (the expr is held so its address is not reused meanwhile).
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> nested_;
};

}  // namespace

Function rewrite_bindings(const Function& fn, const RuleSet& rules, const RewriteOptions& options) {
  if (options.max_rounds < 1) throw Error(str("rewrite_bindings: max_rounds must be at least 1, got ", options.max_rounds));
  Function current = fn;
  for (int round = 0; round < options.max_rounds; ++round) {
    RewriteRound r(*current, rules, options.share_values);
    Function out = r.run();
    if (!out) return current;
    current = out;
    if (!r.read_use_counts()) return current;
    if (round + 1 == options.max_rounds)
      throw TransformError(str("rewrite rules did not reach a fixed point in ", options.max_rounds,
                               " rounds; still firing: ", still_firing(r.fired())));
  }
  return current;
}

Module rewrite_bindings(const Module& mod, const RuleSet& rules, const RewriteOptions& options) {
  return map_functions(mod, [&](const Function& fn) { return rewrite_bindings(fn, rules, options); });
}

}  // namespace aj
