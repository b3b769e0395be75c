// Rules from a pattern function and a replacement function
// (pattern/template_rule.h). Three walks over the two bodies, each from the
// returned value down through the bindings (a chain of vars bound to vars is
// followed in a loop, so recursion is as deep as exprs nest):
//   1. inline each body into one expr (calls nested): bounds the nesting and
//      gives the rule's "pattern -> replacement" text;
//   2. read the pattern function into a Pattern;
//   3. read the replacement into steps (operands before their users) that
//      each match runs, making its calls through the ops' type rules.
#include "adjoint/pattern/template_rule.h"

#include <algorithm>
#include <unordered_map>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/printer.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/common_values.h"

namespace aj {
namespace {

// Inlined bodies bigger than this (a DAG printed as a tree grows fast) are
// described, not printed.
constexpr size_t kMaxPrintedNodes = 1000;

// A function of a rule, for messages: "the pattern function".
std::string function_label(const std::string& name) { return str("the ", name, " function"); }

// The var v stands for: v, or the var it is bound to, followed through vars bound to vars.
const VarNode* through_var_chain(const DataflowIndex& index, const VarNode* v) {
  for (const Expr* value = index.value(v); value && (*value)->kind() == ExprKind::kVar; value = index.value(v))
    v = static_cast<const VarNode*>(value->get());
  return v;
}

// ---- 1. inlining, and the rule's text ----

// The returned value of a function with every bound var replaced by its
// value (types kept, nothing re-inferred) and param i by printed_params[i];
// with fold_items, an item of a written tuple is that field (as the
// replacement makes it).
class Inliner {
 public:
  Inliner(const FunctionNode& fn, std::string label, std::vector<Var> printed_params, bool fold_items)
      : index_(fn), label_(std::move(label)), params_(std::move(printed_params)), fold_items_(fold_items),
        memo_(index_.num_defs()) {}

  // A TypeInferenceError from a node made too deep (a value used at several
  // depths) is reported as the walk's own limit is.
  Expr inline_return() {
    try {
      return expr(index_.function().ret(), 0);
    } catch (const TypeInferenceError&) {
      too_deep();
    }
  }

 private:
  Expr expr(const Expr& e, int depth) {
    if (depth > kMaxExprDepth) too_deep();
    std::vector<Expr> operands;
    switch (e->kind()) {
      case ExprKind::kVar:
        return var(static_cast<const VarNode*>(e.get()), depth);
      case ExprKind::kConstant:
        return e;
      case ExprKind::kCall: {
        const auto& c = static_cast<const CallNode&>(*e);
        for (const Expr& a : c.args()) operands.push_back(expr(a, depth + 1));
        return std::make_shared<CallNode>(&c.op(), std::move(operands), c.attrs(), c.type());
      }
      case ExprKind::kTuple:
        for (const Expr& f : static_cast<const TupleNode&>(*e).fields()) operands.push_back(expr(f, depth + 1));
        return std::make_shared<TupleNode>(std::move(operands));
      case ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const TupleGetItemNode&>(*e);
        Expr tuple = expr(g.tuple(), depth + 1);
        if (fold_items_ && tuple->kind() == ExprKind::kTuple)
          return static_cast<const TupleNode&>(*tuple).fields()[static_cast<size_t>(g.index())];
        return std::make_shared<TupleGetItemNode>(std::move(tuple), g.index());
      }
    }
    return e;
  }

  Expr var(const VarNode* v, int depth) {
    v = through_var_chain(index_, v);
    Expr& slot = memo_[static_cast<size_t>(index_.def_index(v))];
    if (slot) return slot;
    int64_t param = index_.param_index(v);
    slot = param >= 0 ? Expr(params_[static_cast<size_t>(param)]) : expr(*index_.value(v), depth);
    return slot;
  }

  [[noreturn]] void too_deep() const {
    throw Error(str(label_, ": its body nests calls and tuples more than ", kMaxExprDepth, " deep"));
  }

  DataflowIndex index_;
  std::string label_;
  std::vector<Var> params_;
  bool fold_items_;
  std::vector<Expr> memo_;  // by def index
};

// What fn returns, as written: "x", "(a, b)".
std::string returned_text(const Function& fn) { return print_return(fn).substr(std::string("return ").size()); }

// How many nodes e has printed as a tree, up to `limit` (shared nodes count once per use).
size_t tree_size(const Expr& e, size_t limit, std::unordered_map<const ExprNode*, size_t>& memo) {
  auto it = memo.find(e.get());
  if (it != memo.end()) return it->second;
  size_t n = 1;
  for_each_operand(*e, [&](const Expr& o) { n = std::min(limit, n + tree_size(o, limit, memo)); });
  memo.emplace(e.get(), n);
  return n;
}

// e as the text format writes it in a returned value: exp(log(x)).
std::string expr_text(const Expr& e, const std::vector<Var>& params) {
  std::unordered_map<const ExprNode*, size_t> memo;
  size_t size = tree_size(e, kMaxPrintedNodes + 1, memo);
  if (size > kMaxPrintedNodes) return str("<an expr of more than ", kMaxPrintedNodes, " nodes>");
  return returned_text(std::make_shared<FunctionNode>(params, std::vector<Binding>{}, e));
}

// Vars for printing both bodies with the pattern's param names (the
// replacement's params stand for the pattern's, by position), each with the
// type it has in `fn`.
std::vector<Var> printed_params(const FunctionNode& names, const FunctionNode& fn) {
  std::vector<Var> out;
  for (size_t i = 0; i < fn.params().size(); ++i)
    out.push_back(std::make_shared<VarNode>(names.params()[i]->name_hint(), fn.params()[i]->type()));
  return out;
}

// "exp(log(x)) -> x"
std::string rule_text(const FunctionNode& pattern, const FunctionNode& replacement) {
  std::vector<Var> pattern_params = printed_params(pattern, pattern);
  std::vector<Var> replacement_params = printed_params(pattern, replacement);
  Expr before = Inliner(pattern, function_label("pattern"), pattern_params, false).inline_return();
  Expr after = Inliner(replacement, function_label("replacement"), replacement_params, true).inline_return();
  return str(expr_text(before, pattern_params), " -> ", expr_text(after, replacement_params));
}

// ---- 2. the pattern ----

// The pattern of a function's body (see template_rule.h). Recursion follows
// the nesting of exprs, which the Inliner has bounded.
class PatternReader {
 public:
  explicit PatternReader(const Function& fn) : fn_(fn), index_(*fn), memo_(index_.num_defs()), uses_(memo_.size()) {
    for (const Binding& b : fn->bindings())
      if (b.value->kind() != ExprKind::kVar) count_uses(b.value);
    count_uses(fn->ret());
  }

  Pattern read() {
    const FunctionNode& fn = *fn_;
    const VarNode* root = as<VarNode>(fn.ret()) ? through_var_chain(index_, as<VarNode>(fn.ret())) : nullptr;
    const Expr* value = root ? index_.value(root) : &fn.ret();
    if (!value || (*value)->kind() != ExprKind::kCall)
      throw Error(str(function_label("pattern"), " returns ", returned_text(fn_),
                      ", which is no call: a rule rewrites calls"));
    Pattern p = expr(fn.ret());
    for (size_t i = 0; i < fn.params().size(); ++i)
      if (!memo_[i])
        throw Error(str(function_label("pattern"), ": param '", fn.params()[i]->name_hint(),
                        "' is not used by the returned value (each param must match a value)"));
    return p;
  }

  // The wildcard each param became, by position (after read()).
  std::vector<const PatternNode*> param_patterns() const {
    std::vector<const PatternNode*> out;
    for (size_t i = 0; i < fn_->params().size(); ++i) out.push_back(memo_[i].get());
    return out;
  }

 private:
  Pattern expr(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar:
        return var(static_cast<const VarNode*>(e.get()));
      case ExprKind::kConstant:
        return equal_constant(std::static_pointer_cast<const ConstantNode>(e));
      case ExprKind::kCall:
        return call(static_cast<const CallNode&>(*e));
      case ExprKind::kTuple: {
        std::vector<Pattern> fields;
        for (const Expr& f : static_cast<const TupleNode&>(*e).fields()) fields.push_back(expr(f));
        return is_tuple(std::move(fields));
      }
      case ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const TupleGetItemNode&>(*e);
        return is_tuple_get_item(expr(g.tuple()), g.index());
      }
    }
    return wildcard();
  }

  // A param: a capture. A bound var: its value's pattern, captured when the
  // var is used more than once, so that all uses match one value. Captures
  // are named "%" and the var's def index (unique, whatever the names are).
  Pattern var(const VarNode* v) {
    v = through_var_chain(index_, v);
    size_t i = static_cast<size_t>(index_.def_index(v));
    if (memo_[i]) return memo_[i];
    if (index_.is_param(v)) {
      memo_[i] = wildcard().named(str("%", i));
    } else {
      Pattern p = expr(*index_.value(v));
      memo_[i] = uses_[i] > 1 ? p.named(str("%", i)) : p;
    }
    return memo_[i];
  }

  // op(args) with every attr equal to the call's.
  Pattern call(const CallNode& c) {
    std::vector<Pattern> args;
    for (const Expr& a : c.args()) args.push_back(expr(a));
    KwAttrs attrs;
    for (size_t i = 0; i < c.attrs().size(); ++i) attrs.emplace_back(c.op().attrs[i].name, c.attrs()[i]);
    return is_op(c.op().name)(std::move(args), attrs);
  }

  static Pattern equal_constant(const Constant& c) {
    return is_const().where(str("equal to ", expr_text(c, {})), [c](const ExprNode& value) {
      return value.kind() == ExprKind::kConstant && cse::constants_equal(*c, static_cast<const ConstantNode&>(value));
    });
  }

  // Counts each use of a var in e, as a use of the var it stands for.
  void count_uses(const Expr& e) {
    if (auto* v = as<VarNode>(e)) {
      ++uses_[static_cast<size_t>(index_.def_index(through_var_chain(index_, v)))];
      return;
    }
    for_each_operand(*e, [this](const Expr& o) { count_uses(o); });
  }

  Function fn_;
  DataflowIndex index_;
  std::vector<Pattern> memo_;  // by def index
  std::vector<uint32_t> uses_;  // by def index: how often the function uses each var
};

// ---- 3. the replacement ----

// One value the replacement builds: a param's capture, or the replacement's
// own expr remade from the values of its operands.
struct Step {
  int param = -1;                  // >= 0: the capture of the pattern's param at this position
  Expr node;                       // else: a call, tuple, tuple item or constant of the replacement
  std::vector<uint32_t> operands;  // steps whose values are its operands
};

// The replacement's body as steps, operands first; the last is the returned value.
class ReplacementReader {
 public:
  explicit ReplacementReader(const FunctionNode& fn) : index_(fn), memo_(index_.num_defs(), kNone) {}

  std::vector<Step> read() && {
    expr(index_.function().ret());
    return std::move(steps_);
  }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};

  uint32_t expr(const Expr& e) {
    Step step;
    switch (e->kind()) {
      case ExprKind::kVar:
        return var(static_cast<const VarNode*>(e.get()));
      case ExprKind::kConstant:
        break;
      case ExprKind::kCall:
        for (const Expr& a : static_cast<const CallNode&>(*e).args()) step.operands.push_back(expr(a));
        break;
      case ExprKind::kTuple:
        for (const Expr& f : static_cast<const TupleNode&>(*e).fields()) step.operands.push_back(expr(f));
        break;
      case ExprKind::kTupleGetItem:
        step.operands.push_back(expr(static_cast<const TupleGetItemNode&>(*e).tuple()));
        break;
    }
    step.node = e;
    steps_.push_back(std::move(step));
    return static_cast<uint32_t>(steps_.size() - 1);
  }

  uint32_t var(const VarNode* v) {
    v = through_var_chain(index_, v);
    uint32_t& slot = memo_[static_cast<size_t>(index_.def_index(v))];
    if (slot != kNone) return slot;
    int64_t param = index_.param_index(v);
    if (param >= 0) {
      steps_.push_back(Step{static_cast<int>(param), nullptr, {}});
      slot = static_cast<uint32_t>(steps_.size() - 1);
    } else {
      slot = expr(*index_.value(v));
    }
    return slot;
  }

  DataflowIndex index_;
  std::vector<uint32_t> memo_;  // step of each var, by def index
  std::vector<Step> steps_;
};

// The replacement of a template rule, run per match.
class Instantiation {
 public:
  Instantiation(std::vector<const PatternNode*> params, std::vector<Step> steps)
      : params_(std::move(params)), steps_(std::move(steps)) {}

  // The replacement for this match, or nullptr when it does not type-check,
  // has another type than the matched call, or is that call again.
  Expr operator()(const Match& m) const {
    std::vector<Expr> values;
    values.reserve(steps_.size());
    try {
      for (const Step& s : steps_) values.push_back(make(s, values, m));
    } catch (const TypeInferenceError&) {
      return nullptr;
    }
    const Expr& out = values.back();
    if (!type_equal(out->type(), m.root()->type()) || cse::value_equal(out, m.root())) return nullptr;
    return out;
  }

 private:
  Expr make(const Step& s, const std::vector<Expr>& values, const Match& m) const {
    if (s.param >= 0) return capture(m, params_[static_cast<size_t>(s.param)]);
    std::vector<Expr> operands;
    for (uint32_t o : s.operands) operands.push_back(values[o]);
    switch (s.node->kind()) {
      case ExprKind::kCall: {
        const auto& c = static_cast<const CallNode&>(*s.node);
        return make_call(c.op(), std::move(operands), c.attrs());
      }
      case ExprKind::kTuple:
        return std::make_shared<TupleNode>(std::move(operands));
      case ExprKind::kTupleGetItem: {  // a field of a tuple written out, else an item of a call's or capture's tuple
        int index = static_cast<const TupleGetItemNode&>(*s.node).index();
        if (const auto* t = as<TupleNode>(operands[0])) return t->fields()[static_cast<size_t>(index)];
        return std::make_shared<TupleGetItemNode>(operands[0], index);
      }
      default:
        return s.node;
    }
  }

  static const Expr& capture(const Match& m, const PatternNode* param) {
    for (const Capture& c : m.captures())
      if (c.pattern == param) return *c.expr;
    throw Error("template rule: a param of the pattern captured nothing");  // every param is in the pattern
  }

  std::vector<const PatternNode*> params_;  // the wildcard each pattern param became, by position
  std::vector<Step> steps_;
};

// ---- the signatures ----

std::string param_list(const FunctionNode& fn) {
  std::string out;
  for (const Var& p : fn.params()) out += (out.empty() ? "" : ", ") + p->name_hint();
  return out;
}

void check_signatures(const FunctionNode& pattern, const FunctionNode& replacement) {
  if (pattern.params().size() != replacement.params().size())
    throw Error(str("the pattern function takes ", pattern.params().size(), " param(s) (", param_list(pattern),
                    "), the replacement function ", replacement.params().size(), " (", param_list(replacement),
                    "): they must have one signature"));
}

}  // namespace

Rule template_rule(std::string name, const Function& pattern, const Function& replacement) {
  check_signatures(*pattern, *replacement);
  std::string text = rule_text(*pattern, *replacement);
  PatternReader reader(pattern);
  Pattern p = reader.read();
  auto instantiation = std::make_shared<Instantiation>(reader.param_patterns(), ReplacementReader(*replacement).read());
  return Rule{std::move(name), std::move(text), std::move(p),
              [instantiation](const Match& m) { return (*instantiation)(m); }};
}

Rule template_rule(std::string name, const Module& mod) {
  verify(mod);
  std::string extra;
  for (const auto& [fn_name, fn] : mod->functions())
    if (fn_name != "pattern" && fn_name != "replacement") extra += (extra.empty() ? "'" : ", '") + fn_name + "'";
  for (const char* needed : {"pattern", "replacement"})
    if (!mod->contains(needed))
      throw Error(str("a rewriter's module needs functions 'pattern' and 'replacement'; it has no '", needed, "'"));
  if (!extra.empty())
    throw Error(str("a rewriter's module holds only functions 'pattern' and 'replacement'; it also has ", extra));
  return template_rule(std::move(name), mod->lookup("pattern"), mod->lookup("replacement"));
}

}  // namespace aj
