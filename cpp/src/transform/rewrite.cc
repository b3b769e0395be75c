// The binding rewriter (transform/rewrite.h). A round is one walk over the
// bindings that keeps a table of what each var is bound to in the function
// being built (the matcher's view of it, through the Bindings interface),
// what it was first written as when a rule rewrote it, and what stands for
// each var rewritten away. Replacements are bound from an explicit stack,
// so the depth of their cascades is bounded by memory, not the C++ stack.
#include "adjoint/transform/rewrite.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

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
// was rewritten away), the value it is bound to in the function built, and
// the value a rule rewrote into that one (as first written), if any.
struct RewriteVar {
  Expr replaced;
  const ExprNode* value = nullptr;  // kept alive by the input function or the bindings built
  Expr as_written;
};

// A value a rule rewrote, and the leaf that stands for it once bound.
struct RewrittenValue {
  Expr value;
  Expr leaf;
};

// A call, tuple or tuple item on its way to being bound: its operands are
// bound first (their leaves gathered here), then it is rewritten or bound.
struct Pending {
  Expr expr;
  Var root;                      // the var to bind it to, or null for a nested expr
  std::vector<Expr> leaves;      // its operands' leaves, so far
  std::vector<Expr> nested;      // the nested exprs whose leaf it gives (bound once each)
  std::vector<Expr> rewritten;   // the values rules rewrote into it, first to last
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
        seen_(share_values ? fn.bindings().size() : 0, out_),
        max_rewrites_(kMaxRewritesPerBinding + fn.bindings().size()) {}

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

  // The value v is bound to in the function built; in the as-written view,
  // the value a rule rewrote into it, when one did.
  const ExprNode* bound_value(const VarNode* v) const override {
    const RewriteVar* r = vars_.find(v);
    if (!r) return nullptr;
    if (!r->as_written) return r->value;
    ++as_written_reads_;
    return as_written_view_ ? r->as_written.get() : r->value;
  }

  // Users in the function as this round found it; a var the round made has
  // the one use it was made for.
  size_t num_users(const VarNode* v) const override {
    if (!users_) users_ = std::make_unique<DataflowIndex>(fn_);
    return users_->def_kind(v) == DefKind::kUndefined ? 1 : users_->num_users(v);
  }

 private:
  // Sets the view the matcher and replacements see, back to the function
  // built when it ends.
  class AsWrittenView {
   public:
    explicit AsWrittenView(RewriteRound& r) : r_(r) { r_.as_written_view_ = true; }
    ~AsWrittenView() { r_.as_written_view_ = false; }
    AsWrittenView(const AsWrittenView&) = delete;
    AsWrittenView& operator=(const AsWrittenView&) = delete;

   private:
    RewriteRound& r_;
  };

  // The replacement of the first rule that rewrites `value` (to be bound
  // to `root` when given), or nullptr. A rule is tried on the function
  // built, then, when the match read a var a rule rewrote, on that var as
  // first written, where only a replacement that is a leaf counts (the
  // call is an existing value). Both views hold equal values; the second
  // keeps a var's first form in sight, so t = T(m), rewritten into a
  // matmul, still folds T(t) into m instead of transposing the matmul
  // (and the transposes in it) again.
  Expr apply_rules(const Expr& value, const Var& root) {
    auto* call = as<CallNode>(value);
    if (!call) return nullptr;
    for (uint32_t i : rules_.rules_for(call->op().id)) {
      const Rule& rule = rules_.rules()[i];
      Expr out = try_rule(rule, value);
      if (!out || (root && out.get() == root.get()) || gives_back(out, value)) continue;
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

  // Rule's replacement of value where its pattern matches the function
  // built, or else a leaf it gives where it matches as first written (the
  // replacement reads its captures in the view they matched in); nullptr.
  Expr try_rule(const Rule& rule, const Expr& value) {
    size_t reads = as_written_reads_;
    if (matcher_.match(rule.pattern, value)) return replace(rule, value);
    if (as_written_reads_ == reads) return nullptr;  // no var the view changes was read
    AsWrittenView view(*this);
    if (!matcher_.match(rule.pattern, value)) return nullptr;
    Expr out = replace(rule, value);
    return out && (out->kind() == ExprKind::kVar || out->kind() == ExprKind::kConstant) ? out : nullptr;
  }

  // Whether `replacement` is `value` written alike (written_alike): a rule
  // giving that back rewrites nothing.
  bool gives_back(const Expr& replacement, const Expr& value) const {
    bool same = written_alike(replacement.get(), value.get(), 0);
    if (alike_.bucket_count() > 64) alike_ = {};  // a large comparison's table, not walked by every clear after it
    else alike_.clear();
    return same;
  }

  // Whether `a` (a replacement) is `b` written alike, seen through the
  // bindings of this round: the same node, or calls, tuples and items
  // written alike, a var standing for the value it is bound to (exp(log(x))
  // is exp(l) when l = log(x)). Each pair of nodes is compared once (alike_),
  // so a replacement that shares nodes (x = add(x, x) forty times) costs
  // its nodes, not its 2**40 paths.
  bool written_alike(const ExprNode* a, const ExprNode* b, int depth) const {
    if (a == b) return true;
    if (!a || !b || depth > kMaxDepth) return false;
    if (a->kind() != ExprKind::kVar && b->kind() != ExprKind::kVar) {
      if (alike_.count({a, b})) return true;
      if (!operands_written_alike(a, b, depth)) return false;
      alike_.insert({a, b});
      return true;
    }
    if (a->kind() == ExprKind::kVar && b->kind() != ExprKind::kVar)
      return written_alike(bound_value(static_cast<const VarNode*>(a)), b, depth + 1);
    if (b->kind() == ExprKind::kVar && a->kind() != ExprKind::kVar)
      return written_alike(a, bound_value(static_cast<const VarNode*>(b)), depth + 1);
    return false;  // two vars
  }

  // Whether a and b (neither a var) are written alike, operands and all.
  bool operands_written_alike(const ExprNode* a, const ExprNode* b, int depth) const {
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
        return false;  // constants not the same node
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
    if (!v) vars_.add(var.get(), RewriteVar{nullptr, value.get(), nullptr});
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
  // expr object a replacement uses twice is bound once, and a value a rule
  // rewrote earlier in the round is not rewritten again: the leaf it gave
  // stands for it. A loop over a stack of pending exprs, however deep
  // replacements cascade (T(h) down a chain of matmuls).
  Expr bind_simplified(const Expr& e, const Var& root) {
    std::vector<Pending>& stack = stack_;  // kept for its capacity
    stack.clear();
    Pending start;
    start.root = root;
    Expr leaf = open(e, std::move(start), stack);
    while (!stack.empty()) {
      Pending& top = stack.back();
      if (leaf) top.leaves.push_back(std::move(leaf));  // the leaf of its operand just bound
      Operands parts = operands(*top.expr);
      if (top.leaves.size() < parts.size()) {
        leaf = open(parts[top.leaves.size()], Pending{}, stack);
        continue;
      }
      Pending done = std::move(top);
      stack.pop_back();
      leaf = close(std::move(done), stack);
    }
    return leaf;
  }

  // Starts binding e for `p` (its root and what it stands for): the leaf
  // when that is known at once (e a leaf, or a nested expr bound before),
  // else nullptr, e pushed.
  Expr open(const Expr& e, Pending p, std::vector<Pending>& stack) {
    if (e->kind() == ExprKind::kVar || e->kind() == ExprKind::kConstant) return finish(p, e);
    if (!p.root) {
      auto it = nested_.find(e.get());
      if (it != nested_.end()) return finish(p, it->second.second);
      p.nested.push_back(e);
    }
    p.expr = e;
    p.leaves.clear();
    stack.push_back(std::move(p));
    return nullptr;
  }

  // With its operands bound: a tuple is made of their leaves, an item of a
  // literal tuple is that field, another item is bound, and a call is
  // rewritten (its replacement pushed, nullptr returned) or bound.
  Expr close(Pending p, std::vector<Pending>& stack) {
    if (p.expr->kind() == ExprKind::kTuple) return finish(p, std::make_shared<TupleNode>(std::move(p.leaves)));
    if (auto* item = as<TupleGetItemNode>(p.expr)) {
      if (auto* t = as<TupleNode>(p.leaves[0])) return finish(p, t->fields()[static_cast<size_t>(item->index())]);
      return finish_bound(p, std::make_shared<TupleGetItemNode>(p.leaves[0], item->index()));
    }
    const auto& call = static_cast<const CallNode&>(*p.expr);
    bool same = std::equal(p.leaves.begin(), p.leaves.end(), call.args().begin(), call.args().end());
    Expr value = same ? p.expr : std::make_shared<CallNode>(&call.op(), std::move(p.leaves), call.attrs(), call.type());
    if (Expr known = rewritten_before(value)) return finish(p, known);
    Expr replaced = apply_rules(value, p.root);
    if (!replaced) return finish_bound(p, value);
    changed_ = true;
    if (fired_.size() - fired_before_binding_ > max_rewrites_) fail_to_converge("too many rewrites");
    p.rewritten.push_back(std::move(value));
    return open(replaced, std::move(p), stack);
  }

  // Binds value for p; a var bound here keeps the value a rule first
  // rewrote into it (as written).
  Expr finish_bound(Pending& p, const Expr& value) {
    size_t bound = out_.size();
    Var var = bind(p.root, value);
    if (out_.size() > bound && !p.rewritten.empty()) entry(var.get()).as_written = p.rewritten.front();
    return finish(p, var);
  }

  // Records what leaf stands for: the nested exprs and rewritten values of p.
  Expr finish(Pending& p, const Expr& leaf) {
    for (const Expr& e : p.nested) nested_[e.get()] = {e, leaf};
    for (const Expr& v : p.rewritten) {
      rewritten_index_.insert(cse::value_key(v), rewritten_.size());
      rewritten_.push_back({v, leaf});
    }
    p.nested.clear();
    p.rewritten.clear();
    return leaf;
  }

  // The leaf a value equal to `value` was rewritten into this round, or nullptr.
  Expr rewritten_before(const Expr& value) const {
    if (rewritten_.empty()) return nullptr;
    const RewrittenValue* r = rewritten_index_.find(cse::value_key(value), value);
    return r ? r->leaf : nullptr;
  }

  // Unchanged bindings are kept as they are (same var, same value).
  void rewrite(const Binding& b) {
    binding_ = b.var.get();
    fired_before_binding_ = fired_.size();
    forget_nested();
    Expr value = substitute(b.value, replacement());
    Expr leaf = needs_rules(*value) ? bind_simplified(value, b.var) : Expr(bind(b.var, value));
    if (leaf != b.var) entry(b.var.get()).replaced = leaf;
  }

  // Whether binding `value` may rewrite it: a call with a nested call, tuple
  // or item among its operands, or of an op some rule is for. Any other
  // value is bound as it is (no rule fired on a value of its op this round).
  bool needs_rules(const ExprNode& value) const {
    if (value.kind() != ExprKind::kCall) return false;
    const auto* call = static_cast<const CallNode*>(&value);
    if (!rules_.rules_for(call->op().id).empty()) return true;
    return std::any_of(call->args().begin(), call->args().end(), [](const Expr& a) {
      return a->kind() != ExprKind::kVar && a->kind() != ExprKind::kConstant;
    });
  }

  // Empties nested_ in time linear in what it holds: clear() also zeroes
  // every bucket, as many as the largest cascade left, at each binding.
  void forget_nested() {
    if (nested_.bucket_count() > 64) std::unordered_map<const ExprNode*, std::pair<Expr, Expr>>().swap(nested_);
    else nested_.clear();
  }

  static constexpr int kMaxDepth = 256;  // how deep written_alike compares
  struct NodePairHash {
    size_t operator()(const std::pair<const ExprNode*, const ExprNode*>& p) const {
      return hash_combine(std::hash<const void*>()(p.first), std::hash<const void*>()(p.second));
    }
  };
  // The pairs written_alike found alike in the comparison under way (a pair
  // found unlike ends it, so only these need keeping).
  mutable std::unordered_set<std::pair<const ExprNode*, const ExprNode*>, NodePairHash> alike_;
  // Rewrites of one binding past this many, plus one per binding of the
  // function (a cascade may reach each once), do not stop.
  static constexpr size_t kMaxRewritesPerBinding = 1024;

  const FunctionNode& fn_;
  const RuleSet& rules_;
  std::vector<Binding> out_;
  VarTable<RewriteVar> vars_;  // the function's vars and those made here
  FreshNames names_;           // for the vars made here
  Matcher matcher_;            // sees vars_ through this round's Bindings
  bool share_;                 // bind equal values once (common-subexpression elimination)
  cse::SeenValues seen_;       // with share_: the values bound so far, by content
  size_t max_rewrites_;        // of one binding
  bool changed_ = false;
  const VarNode* binding_ = nullptr;  // the binding being rewritten (for messages)
  std::vector<const Rule*> fired_;
  size_t fired_before_binding_ = 0;
  mutable std::unique_ptr<DataflowIndex> users_;  // built when a rule first reads a use count
  bool as_written_view_ = false;         // bound_value gives vars as first written
  mutable size_t as_written_reads_ = 0;  // reads of vars a rule rewrote, in either view
  // The nested exprs of the binding being rewritten, each with the leaf it
  // was bound to (the expr is held so its address is not reused meanwhile).
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> nested_;
  std::vector<Pending> stack_;  // bind_simplified's
  // The values rules rewrote this round, each with its leaf, and an index of them by value.
  std::vector<RewrittenValue> rewritten_;
  cse::ValueIndex<RewrittenValue> rewritten_index_{0, rewritten_};
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
