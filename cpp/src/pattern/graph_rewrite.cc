// rewrite_graph and replace_values (pattern/graph_rewrite.h): checking a
// walk's replacements, binding their values in A-normal form with equal new
// values bound once, then (transform/binding_order.h) every binding put
// after what it uses.
#include "adjoint/pattern/graph_rewrite.h"

#include <algorithm>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/fresh_names.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/binding_order.h"
#include "adjoint/transform/common_values.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

std::string where(const std::string& name) { return str("rewrite_bindings: function '", name, "': "); }

// The walks may grow a function of n bindings to kGrowthFactor * n +
// kGrowthSlack bindings: a rewriter whose new values hold what it matches
// again (exp(log(x)) -> exp(log(exp(log(x))))) doubles the function each
// walk, which the bound on walks alone would let grow to 2**max_rounds.
constexpr size_t kGrowthFactor = 64, kGrowthSlack = 65536;

// For a var that no binding of fn defines: a word on fn's own var of that
// name, when one binds it (the var given is another one, of another
// function or module), else "".
std::string namesake_hint(const FunctionNode& fn, const VarNode& var) {
  for (const Binding& b : fn.bindings())
    if (b.var->name_hint() == var.name_hint())
      return str(" (it is a var of another function or module; this function's '", var.name_hint(),
                 "' is another var: key the dict by the vars the matchings give)");
  return "";
}

// The replacement of each binding (by position; nullptr: kept), each checked
// (see the header); empty when none changes a value. `backward` tells
// whether a new value uses a var bound at or after the binding it replaces
// (only then must the bindings be re-ordered).
std::vector<const Expr*> checked_replacements(const FunctionNode& fn, const std::string& name,
                                              const DataflowIndex& index, const std::vector<GraphReplacement>& reps,
                                              bool& backward) {
  std::vector<const Expr*> given(fn.bindings().size(), nullptr);
  std::vector<uint8_t> named(fn.bindings().size(), 0);
  bool changed = false;
  for (const GraphReplacement& r : reps) {
    const std::string& hint = r.var->name_hint();
    int64_t b = index.binding_index(r.var.get());
    if (b < 0)
      throw TransformError(str(where(name), "the rewriter gave a new value for ",
                               index.is_param(r.var.get()) ? "param '" : "'", hint,
                               "', which no binding of the function defines", namesake_hint(fn, *r.var)));
    if (!type_equal(r.value->type(), r.var->type()))
      throw TypeInferenceError(str(where(name), "the new value for '", hint, "' has type ", r.value->type()->to_string(),
                                   ", but the binding it replaces has type ", r.var->type()->to_string()));
    for_each_var_use_in_dag(r.value, [&](const VarNode* v) {
      int64_t d = index.def_index(v);
      if (d < 0)
        throw TransformError(str(where(name), "the new value for '", hint, "' uses '", v->name_hint(),
                                 "', which the function does not define"));
      backward = backward || index.binding_index(v) >= b;
    });
    const Expr*& slot = given[static_cast<size_t>(b)];
    if (named[static_cast<size_t>(b)]++) {
      const Expr& before = slot ? *slot : fn.bindings()[static_cast<size_t>(b)].value;
      if (!cse::value_equal(before, r.value))
        throw TransformError(str(where(name), "two matches give different new values for '", hint, "'"));
      continue;
    }
    if (cse::value_equal(r.value, fn.bindings()[static_cast<size_t>(b)].value)) continue;
    slot = &r.value;
    changed = true;
  }
  return changed ? given : std::vector<const Expr*>{};
}

// The bindings of the rewritten function, made in order: kept ones as they
// were, a replaced one as the bindings of its new value's nested calls and
// tuple items (to fresh vars; an equal value bound before in this walk is
// reused), then the replaced var bound to what is left.
class NewBindings {
 public:
  // n bindings, r of them replaced.
  NewBindings(const FunctionNode& fn, size_t r)
      : names_(fn), seen_(4 * r + 16, out_), memo_(kMemoSize) { out_.reserve(fn.bindings().size() + 3 * r); }

  void keep(const Binding& b) { out_.push_back(b); }

  void replace(const Var& var, const Expr& value) {
    Expr root = value->kind() == ExprKind::kCall || value->kind() == ExprKind::kTupleGetItem ? with_leaf_operands(value)
                                                                                            : leaf(value);
    if (root->kind() == ExprKind::kCall || root->kind() == ExprKind::kTupleGetItem)
      seen_.insert(cse::value_key(root), out_.size());
    out_.push_back({var, std::move(root)});
  }

  std::vector<Binding> take() { return std::move(out_); }

 private:
  // A var, a constant or a tuple of leaves standing for e.
  Expr leaf(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar:
      case ExprKind::kConstant:
        return e;
      case ExprKind::kTuple: {
        const auto& fields = static_cast<const TupleNode&>(*e).fields();
        std::vector<Expr> out;
        bool changed = false;
        for (const Expr& f : fields) {
          out.push_back(leaf(f));
          changed = changed || out.back() != f;
        }
        return changed ? std::make_shared<TupleNode>(std::move(out)) : e;
      }
      case ExprKind::kCall:
      case ExprKind::kTupleGetItem:
        break;
    }
    Memo& m = memo_[(reinterpret_cast<uintptr_t>(e.get()) >> 4) & (kMemoSize - 1)];
    if (m.node != e.get()) m = {e.get(), bind_shared(with_leaf_operands(e))};
    return m.leaf;
  }

  // A call or tuple item with its operands made leaves.
  Expr with_leaf_operands(const Expr& e) {
    if (auto* item = as<TupleGetItemNode>(e)) {
      Expr t = leaf(item->tuple());
      return t == item->tuple() ? e : std::make_shared<TupleGetItemNode>(t, item->index());
    }
    const auto& call = static_cast<const CallNode&>(*e);
    std::vector<Expr> args;
    bool changed = false;
    for (const Expr& a : call.args()) {
      args.push_back(leaf(a));
      changed = changed || args.back() != a;
    }
    return changed ? std::make_shared<CallNode>(&call.op(), std::move(args), call.attrs(), call.type()) : e;
  }

  Var bind_shared(const Expr& value) {
    size_t key = cse::value_key(value);
    if (Var earlier = seen_.find(key, value)) return earlier;
    seen_.insert(key, out_.size());
    auto var = std::make_shared<VarNode>(names_.next(), value->type());
    out_.push_back({var, value});
    return var;
  }

  // The var bound to a nested call or tuple item, by its node: the new
  // values of one match share nodes (q, k and v items of one split), and a
  // node's leaf is found here before it is rebuilt and hashed again. The
  // nodes stay alive (the replacements hold them) while this lives.
  struct Memo {
    const ExprNode* node = nullptr;
    Expr leaf;
  };
  static constexpr size_t kMemoSize = 64;

  FreshNames names_;  // for the vars of nested calls and tuple items
  std::vector<Binding> out_;
  cse::SeenValues seen_;  // the new values bound so far (indices into out_)
  std::vector<Memo> memo_;
};

[[noreturn]] void cycle_error(const std::string& name, const std::vector<Binding>& bindings) {
  std::vector<uint8_t> stuck = bindings_on_cycles(bindings);
  std::string first, names;
  size_t listed = 0;
  for (size_t i = 0; i < bindings.size(); ++i) {
    if (!stuck[i]) continue;
    const std::string& hint = bindings[i].var->name_hint();
    if (first.empty()) first = hint;
    if (listed++ < 8) names += (names.empty() ? "" : ", ") + hint;
  }
  if (listed > 8) names += str(", and ", listed - 8, " more");
  throw TransformError(str(where(name), "the new values make '", first, "' depend on itself (no order puts ",
                           names, " after what they use)"));
}

// The bindings with each after the bindings of the vars it uses, otherwise
// in their order (transform/binding_order.h); a TransformError on a cycle.
std::vector<Binding> in_dependency_order(std::vector<Binding> bindings, const std::string& name) {
  std::optional<std::vector<uint32_t>> order = stable_dependency_order(bindings);
  if (!order) cycle_error(name, bindings);
  std::vector<Binding> out;
  out.reserve(bindings.size());
  for (uint32_t i : *order) out.push_back(std::move(bindings[i]));
  return out;
}

}  // namespace

Function replace_values(const Function& fn, const std::string& name, const DataflowIndex& index,
                          const std::vector<GraphReplacement>& replacements) {
  bool backward = false;
  std::vector<const Expr*> given = checked_replacements(*fn, name, index, replacements, backward);
  if (given.empty()) return nullptr;
  NewBindings out(*fn, replacements.size());
  for (size_t i = 0; i < given.size(); ++i) {
    const Binding& b = fn->bindings()[i];
    if (given[i]) out.replace(b.var, *given[i]);
    else out.keep(b);
  }
  std::vector<Binding> bindings = out.take();
  if (backward) bindings = in_dependency_order(std::move(bindings), name);
  return std::make_shared<FunctionNode>(fn->params(), std::move(bindings), fn->ret(), fn->attrs());
}

Function rewrite_graph(const Function& fn, const std::string& name, const GraphPattern& gp,
                       const GraphRewriter& rewriter, int max_rounds) {
  if (max_rounds < 1) throw Error(str("rewrite_bindings: max_rounds must be at least 1, got ", max_rounds));
  const size_t max_size = kGrowthFactor * fn->bindings().size() + kGrowthSlack;
  Function current = fn;
  for (int walk = 0;; ++walk) {
    DataflowIndex index(*current);
    IndexBindings bindings(index);
    std::vector<GraphMatch> matches = match_graph(gp, index, bindings);
    if (matches.empty()) return current;
    GraphWalk w{name, current, index};
    std::vector<GraphReplacement> replacements;
    for (const GraphMatch& m : matches) {
      std::vector<GraphReplacement> r = rewriter(m, w);
      replacements.insert(replacements.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
    }
    Function out = replace_values(current, name, index, replacements);
    if (!out) return current;
    if (walk == max_rounds)
      throw TransformError(str(where(name), "the rewriter still gives new values after ", max_rounds,
                               " walks (return {} for a match it has nothing to do with; give a larger max_rounds when each walk "
                               "does part of the work)"));
    current = dead_code_elimination(std::move(out));
    if (current->bindings().size() > max_size)
      throw TransformError(str(where(name), "the rewriter's new values grow the function from ", fn->bindings().size(),
                               " to ", current->bindings().size(), " bindings in ", walk + 1,
                               " walk(s), past ", kGrowthFactor, " times its size plus ", kGrowthSlack,
                               " (do new values hold what the patterns match again?)"));
  }
}

Module rewrite_graph(const Module& mod, const GraphPattern& gp, const GraphRewriter& rewriter, int max_rounds) {
  std::vector<std::pair<std::string, Function>> functions;
  bool changed = false;
  for (const auto& [name, fn] : mod->functions()) {
    functions.emplace_back(name, rewrite_graph(fn, name, gp, rewriter, max_rounds));
    changed = changed || functions.back().second != fn;
  }
  return changed ? std::make_shared<ModuleNode>(std::move(functions)) : mod;
}

}  // namespace aj
