// ReassociateMatmul (DESIGN.md §7): rewrites matmul expressions to the
// algebraically equal form that estimate_flops(compile_time_free=True)
// counts cheapest. The rewrites, one per row of rewrite_table() below
// (ReassociateMatmul.rules in Python), each in both directions:
//
//   low_rank_update      matmul(add(W, matmul(B, A)), x)  <->  add(matmul(W, x), matmul(B, matmul(A, x)))
//   low_rank_update_rhs  matmul(x, add(W, matmul(A, B)))  <->  add(matmul(x, W), matmul(matmul(x, A), B))
//   matmul_chain         A @ B @ C @ ... under one bracketing -> the cheapest bracketing
//
// The add may take its operands in either order; the low-rank term of the
// expanded form may be bracketed either way (matmul(matmul(B, A), x) too);
// operands may have batch dims (an alternative whose type differs from the
// value's, or that does not type, is not considered), but a form with both a
// 1-D and a batched operand is left as it is, and so is a low-rank form
// with a 1-D A (the middle leaf of B A x or x A B, read as a row on one side
// and a column on the other) or whose sum broadcasts an operand along the
// axis the matmul contracts. Every inner value of
// a form (the sum, the products) must be used by the form alone, and every
// matmul of a form must have the same attrs (out_dtype), which the new
// matmuls take.
//
// The choice (transform/form_cost.h): each call of a form costs its FLOP
// rule, nothing when its leaves are all computable at compile time (the
// weights of num_input, and what only they and constants give). An
// alternative replaces the input form only when its cost is no larger for
// every dim value within dim_bounds and is not the same polynomial;
// identical or undecided costs keep the input. So with A and B weights,
// (W + B@A) @ x wins (its sum is free, and LiftTransformParams lifts it);
// with A and B inputs and r small, W@x + B@(A@x) does.
//
// Algorithm, per function, linear in its size for bounded chains:
//   0. Dead-code elimination, so that a value's users are the ones it keeps.
//   1. Walk the bindings from last to first; a binding no earlier-visited
//      (later) form took in is tried as the root of a form: a low-rank
//      form (patterns below), else a matmul chain (its matmul operands that
//      are used only there, followed down to kMaxChainLeaves leaves; only
//      its first and last leaves may be 1-D). The form's inner bindings are
//      then taken in, except those of a low-rank form kept as it is: they
//      stay free to be roots of forms of their own (a chain in the full-rank
//      term, W = U@V in (U@V)@x + B@(A@x)). A low-rank form is
//      weighed against every form each reading of it gives, and each reading
//      of those (operands that coincide, W and B one var, read several
//      ways), up to kMaxLowRankForms; a chain against the bracketings
//      transform/matmul_chain.h proposes.
//   2. The chosen form is bound in place of the root's value: its new
//      inner calls as new bindings just before the root (a call the form
//      reaches twice, as x in W@x + B@(A@x) when x is itself a sum a match
//      took in, once), the root's var bound to its outer call. Dead-code elimination removes the old
//      inner bindings.
//   3. Rounds repeat while one changes the function (a rewrite can make a
//      new form: a re-bracketed chain can expose a sum times a matrix), up
//      to kMaxRounds. Every rewrite lowers the cost, so rounds end; a chain
//      longer than kMaxRounds windows of kMaxChainLeaves operands may be
//      left with more to gain, which another run takes.
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/flops.h"
#include "adjoint/ir/builder.h"
#include "adjoint/op/ops.h"
#include "adjoint/op/registry.h"
#include "adjoint/pattern/match.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/form_cost.h"
#include "adjoint/transform/matmul_chain.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

// A value's forms: the one it has, the equal ones it may take instead, and
// the bindings the input form takes in.
struct Forms {
  const char* kind = "matmul_chain";  // its row of rewrite_table()
  bool low_rank = false;
  Expr input;
  std::vector<Expr> alternatives;
  std::unordered_set<const VarNode*> inner;
};

// The four low-rank shapes, each a pattern and whether x is the right
// operand (left: the sum or the low-rank factors multiply x from the left).
// Names: W the full-rank term, B and A the factors, x the other operand;
// kInnerNames the values the form computes on the way (a rewrite replaces
// them, so only the form may use them).
struct LowRankPattern {
  Pattern pattern;
  bool left;
};

constexpr const char* kInnerNames[] = {"sum", "low_rank", "direct", "through", "inner"};
constexpr size_t kMaxLowRankForms = 8;
constexpr int kMaxRounds = 8;

Pattern either_order(const OpPattern& op, const Pattern& a, const Pattern& b) { return op({a, b}) | op({b, a}); }

std::vector<LowRankPattern> make_low_rank_patterns() {
  OpPattern matmul = is_op(ops::matmul), add = is_op(ops::add);
  Pattern W = wildcard().named("W"), A = wildcard().named("A"), B = wildcard().named("B"), x = wildcard().named("x");
  Pattern through_left = (matmul({B, matmul({A, x}).named("inner")}) | matmul({matmul({B, A}).named("inner"), x}));
  Pattern through_right = (matmul({matmul({x, A}).named("inner"), B}) | matmul({x, matmul({A, B}).named("inner")}));
  return {
      {matmul({either_order(add, W, matmul({B, A}).named("low_rank")).named("sum"), x}), true},
      {matmul({x, either_order(add, W, matmul({A, B}).named("low_rank")).named("sum")}), false},
      {either_order(add, matmul({W, x}).named("direct"), through_left.named("through")), true},
      {either_order(add, matmul({x, W}).named("direct"), through_right.named("through")), false},
  };
}

const std::vector<LowRankPattern>& low_rank_patterns() {
  static const std::vector<LowRankPattern> p = make_low_rank_patterns();
  return p;
}

class Reassociate {
 public:
  Reassociate(const FunctionNode& fn, const DimBounds& bounds)
      : fn_(fn), index_(fn), cost_(index_, bounds), bindings_(index_), taken_(fn.bindings().size(), 0) {}

  Function run() {
    std::vector<Expr> chosen(fn_.bindings().size());
    bool changed = false;
    for (size_t b = fn_.bindings().size(); b-- > 0;) {
      if (taken_[b] || fn_.bindings()[b].value->kind() != ExprKind::kCall) continue;
      std::optional<Forms> forms = low_rank_forms(fn_.bindings()[b].value);
      if (!forms) forms = chain_forms(fn_.bindings()[b].value);
      if (!forms) continue;
      chosen[b] = choose(*forms);
      if (chosen[b] || !forms->low_rank)
        for (const VarNode* v : forms->inner) taken_[index_.binding_index(v)] = 1;
      if (chosen[b]) count_pass_stat(forms->kind);
      changed = changed || chosen[b];
    }
    return changed ? rebuild(chosen) : nullptr;
  }

 private:
  // A var bound to a call, used once (by one binding, once there: not as
  // both operands of matmul(v, v)), not by the return, not taken yet.
  bool only_here(const Expr& e) const {
    const auto* v = as<VarNode>(e);
    if (!v || !index_.call(v) || index_.num_users(v) != 1 || index_.used_by_return(v)) return false;
    const int64_t def = index_.def_index(v);
    size_t uses = 0;
    for (int32_t d : index_.operand_defs(static_cast<size_t>(index_.users(v).front()))) uses += d == def;
    return uses == 1 && !taken_[index_.binding_index(v)];
  }

  // The low-rank forms of `value`: the input, read through the bindings
  // its matches take in, then every form a match of a known form rewrites
  // it to (a form may match several ways when its operands coincide: W and
  // B the same var), up to kMaxLowRankForms.
  std::optional<Forms> low_rank_forms(const Expr& value) {
    Matcher matcher(bindings_);
    Forms forms;
    for (const LowRankPattern& p : low_rank_patterns()) {
      if (!matcher.match(p.pattern, value)) continue;
      std::vector<const VarNode*> inner;
      bool own = true;
      for (const char* name : kInnerNames) {
        if (!matcher.result().has(name)) continue;
        const Expr& e = matcher.result()[name];
        own = own && only_here(e);
        inner.push_back(as<VarNode>(e));
      }
      if (!own) continue;
      if (forms.inner.empty()) forms.kind = p.left ? "low_rank_update" : "low_rank_update_rhs";
      forms.low_rank = true;
      forms.inner.insert(inner.begin(), inner.end());
    }
    if (forms.inner.empty()) return std::nullopt;
    forms.input = expand_form(value, forms.inner, index_);
    std::optional<Attrs> attrs = common_matmul_attrs(forms.input);
    if (!attrs) return std::nullopt;
    std::vector<Expr> known{forms.input};
    for (size_t i = 0; i < known.size() && known.size() < kMaxLowRankForms; ++i)
      for (const LowRankPattern& p : low_rank_patterns())
        if (matcher.match(p.pattern, known[i]) && inner_values_are_calls(matcher.result()))
          for (Expr& form : rewrites(matcher.result(), p.left, *attrs, value->type()))
            if (!contains(known, form)) known.push_back(std::move(form));
    forms.alternatives.assign(known.begin() + 1, known.end());
    return forms;
  }

  std::optional<Forms> chain_forms(const Expr& value) {
    const auto* root = as<CallNode>(value);
    if (!is_call_of(root, ops::matmul)) return std::nullopt;
    Forms forms;
    std::vector<Expr> leaves = root->args();
    for (size_t i = 0; i < leaves.size() && leaves.size() < kMaxChainLeaves;) {
      const CallNode* call = index_.call(leaves[i]);
      if (!only_here(leaves[i]) || !is_call_of(call, ops::matmul) || !attrs_equal(call->attrs(), root->attrs())) {
        ++i;
        continue;
      }
      forms.inner.insert(static_cast<const VarNode*>(leaves[i].get()));
      leaves[i] = call->args()[1];
      leaves.insert(leaves.begin() + static_cast<std::ptrdiff_t>(i), call->args()[0]);
    }
    if (leaves.size() < 3 || !middle_leaves_are_matrices(leaves) || vector_meets_batch(leaves)) return std::nullopt;
    forms.input = expand_form(value, forms.inner, index_);
    for (Expr& form : cheapest_bracketings(leaves, root->attrs(), cost_))
      if (type_equal(form->type(), value->type())) forms.alternatives.push_back(std::move(form));
    return forms;
  }

  static bool attrs_equal(const Attrs& a, const Attrs& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!attr_equal(a[i], b[i])) return false;
    return true;
  }

  // The attrs every matmul of the form has, or nullopt when two differ.
  static std::optional<Attrs> common_matmul_attrs(const Expr& form) {
    std::optional<Attrs> out;
    bool same = true;
    std::function<void(const Expr&)> visit = [&](const Expr& e) {
      const auto* call = as<CallNode>(e);
      if (!call) return;
      if (is_call_of(call, ops::matmul)) {
        if (out && !attrs_equal(*out, call->attrs())) same = false;
        out = call->attrs();
      }
      for (const Expr& arg : call->args()) visit(arg);
    };
    visit(form);
    return same ? out : std::nullopt;
  }

  // A 1-D operand in the middle of a chain is read as a row on one side and
  // a column on the other: re-bracketing would change what it means.
  static bool middle_leaves_are_matrices(const std::vector<Expr>& leaves) {
    for (const Expr& leaf : leaves)
      if (!leaf->type()->is_tensor()) return false;
    for (size_t i = 1; i + 1 < leaves.size(); ++i)
      if (leaves[i]->type()->ndim() < 2) return false;
    return true;
  }

  // A 1-D end operand multiplied with a batched one first gives a batch of
  // vectors, which a further matmul would read as a matrix: with both in a
  // form, re-bracketing may change its meaning while keeping its type, as
  // p0 (2, 2) @ (p3 (2, 2, 2) @ p4 (2,)) against (p0 @ p3) @ p4.
  static bool vector_meets_batch(const std::vector<Expr>& operands) {
    bool vector = false, batched = false;
    for (const Expr& e : operands) {
      vector = vector || e->type()->ndim() == 1;
      batched = batched || e->type()->ndim() >= 3;
    }
    return vector && batched;
  }

  // The factored and expanded forms a low-rank match stands for, when both
  // type with `type`, A is a matrix and the factored sum broadcasts no
  // operand along the axis the matmul contracts; else none. Only then are
  // the two equal: A is the middle leaf of the chain B A x (x A B), which
  // the rewrite re-brackets, and a (n,) W added to an (n, n) term on the
  // right of x @ (W + A@B) is a row repeated down the contracted axis,
  // which x @ W reads as a column.
  static std::vector<Expr> rewrites(const Match& m, bool left, const Attrs& attrs, const Type& type) {
    const Expr &W = m["W"], &A = m["A"], &B = m["B"], &x = m["x"];
    std::vector<Expr> low_rank_chain = left ? std::vector<Expr>{B, A, x} : std::vector<Expr>{x, A, B};
    if (vector_meets_batch({W, A, B, x}) || !middle_leaves_are_matrices(low_rank_chain)) return {};
    auto mm = [&](Expr a, Expr b) { return make_call(ops::matmul.def(), {std::move(a), std::move(b)}, attrs); };
    auto sum = [](Expr a, Expr b) { return ops::add({std::move(a), std::move(b)}); };
    std::vector<Expr> out;
    for (int expanded = 0; expanded < 2; ++expanded) {
      try {
        Expr form = expanded ? (left ? sum(mm(W, x), mm(B, mm(A, x))) : sum(mm(x, W), mm(mm(x, A), B)))
                             : (left ? mm(sum(W, mm(B, A)), x) : mm(x, sum(W, mm(A, B))));
        if (!type_equal(form->type(), type)) return {};
        if (!expanded && !sum_keeps_contracted_axis(static_cast<const CallNode&>(*form).args()[left ? 0 : 1], left))
          return {};
        out.push_back(std::move(form));
      } catch (const TypeInferenceError&) {
        return {};
      }
    }
    return out;
  }

  // Whether both operands of `sum` (an add, the left operand of a matmul
  // when `left`, else the right) span the axis the matmul contracts: the
  // last for a left operand, the one before it for a right one (the only
  // one when it is 1-D). An operand of size 1 there broadcasts along it,
  // unless the sum's size there is 1 too. An operand without that axis (1-D
  // on the right of a 2-D sum) never spans it, whatever its size: its own
  // product with x drops the axis, and an add reads that vector as a row.
  static bool sum_keeps_contracted_axis(const Expr& sum, bool left) {
    const auto& call = static_cast<const CallNode&>(*sum);
    const Shape& shape = call.type()->shape();
    auto ndim = static_cast<int64_t>(shape.size());
    int64_t axis = left || ndim < 2 ? ndim - 1 : ndim - 2;
    if (axis < 0) return true;
    const Dim& size = shape[static_cast<size_t>(axis)];
    bool size_one = size.is_const() && size.value() == 1;
    for (const Expr& arg : call.args()) {
      const Shape& s = arg->type()->shape();
      int64_t a = axis - (ndim - static_cast<int64_t>(s.size()));
      if (a < 0) return false;
      if (!size_one && !(s[static_cast<size_t>(a)] == size)) return false;
    }
    return true;
  }

  // Whether the inner values a match captured are calls of the matched form
  // itself (not vars bound elsewhere, which the form would not replace).
  static bool inner_values_are_calls(const Match& m) {
    for (const char* name : kInnerNames)
      if (m.has(name) && m[name]->kind() != ExprKind::kCall) return false;
    return true;
  }

  static bool contains(const std::vector<Expr>& forms, const Expr& form) {
    for (const Expr& f : forms)
      if (same_form(f, form)) return true;
    return false;
  }

  // The alternative to bind instead of the input form, or nullptr.
  Expr choose(const Forms& forms) const {
    try {
      std::vector<Dim> costs;
      for (const Expr& form : forms.alternatives) costs.push_back(cost_.cost(form));
      std::optional<size_t> pick = cost_.choose(cost_.cost(forms.input), costs);
      return pick ? forms.alternatives[*pick] : nullptr;
    } catch (const SizeOverflowError&) {
      return nullptr;  // counts beyond int64: no choice is made
    }
  }

  // Binds form's inner calls as new bindings and returns its outer call
  // over them.
  // `form`'s call with each call under it bound first, once each: a call
  // the form reaches twice (its DAG shares it) is bound once, in `bound`.
  Expr bind_inner(FunctionBuilder& out, const Expr& form, const std::string& hint,
                  std::unordered_map<const ExprNode*, Var>& bound) {
    const auto& call = static_cast<const CallNode&>(*form);
    std::vector<Expr> args;
    for (const Expr& arg : call.args()) {
      if (arg->kind() != ExprKind::kCall) { args.push_back(arg); continue; }
      Var& v = bound[arg.get()];
      if (!v) {
        Expr inner = bind_inner(out, arg, hint, bound);
        v = std::make_shared<VarNode>(hint, inner->type());
        out.push_binding({v, inner});
      }
      args.push_back(v);
    }
    return std::make_shared<CallNode>(&call.op(), std::move(args), call.attrs(), call.type());
  }

  Function rebuild(const std::vector<Expr>& chosen) {
    FunctionBuilder out(fn_.attrs(), false);
    for (const Var& p : fn_.params()) out.add_existing_param(p);
    out.reserve(fn_.bindings().size());
    for (size_t b = 0; b < fn_.bindings().size(); ++b) {
      const Binding& binding = fn_.bindings()[b];
      if (!chosen[b]) { out.push_binding(binding); continue; }
      std::unordered_map<const ExprNode*, Var> bound;
      out.push_binding({binding.var, bind_inner(out, chosen[b], binding.var->name_hint() + "_part", bound)});
    }
    return dead_code_elimination(out.finish(fn_.ret()));
  }

  const FunctionNode& fn_;
  DataflowIndex index_;
  FormCost cost_;
  IndexBindings bindings_;
  std::vector<uint8_t> taken_;  // per binding: inside a form already tried
};

const std::vector<std::pair<std::string, std::string>>& rewrite_table() {
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"low_rank_update", "matmul(add(W, matmul(B, A)), x) <-> add(matmul(W, x), matmul(B, matmul(A, x)))"},
      {"low_rank_update_rhs", "matmul(x, add(W, matmul(A, B))) <-> add(matmul(x, W), matmul(matmul(x, A), B))"},
      {"matmul_chain", "A @ B @ C @ ... (any bracketing) -> the cheapest bracketing"},
  };
  return table;
}

}  // namespace

Function reassociate_matmul(const Function& fn, const DimBounds& bounds) {
  Function current = dead_code_elimination(fn);  // use counts as the output will have them
  for (int round = 0; round < kMaxRounds; ++round) {
    Function next = Reassociate(*current, bounds).run();
    if (!next) break;
    current = next;
  }
  return current;
}

Module reassociate_matmul(const Module& mod, const DimBounds& bounds) {
  std::set<std::string> symbols;
  for (const auto& [name, fn] : mod->functions())
    for (const std::string& s : function_symbols(*fn)) symbols.insert(s);
  bounds.require_known(symbols, "ReassociateMatmul: dim_bounds");
  std::vector<std::pair<std::string, Function>> functions;
  bool changed = false;
  for (const auto& [name, fn] : mod->functions()) {
    functions.emplace_back(name, reassociate_matmul(fn, bounds));
    changed = changed || functions.back().second != fn;
  }
  return changed ? std::make_shared<ModuleNode>(std::move(functions)) : mod;
}

const std::vector<std::pair<std::string, std::string>>& reassociate_matmul_rewrites() { return rewrite_table(); }

}  // namespace aj
