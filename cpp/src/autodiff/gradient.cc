// The Gradient pass (autodiff/gradient.h): copies a function, then walks its
// bindings backward, asking each op's VJP rule for the adjoints of its args.
#include "adjoint/autodiff/gradient.h"

#include <algorithm>
#include <unordered_map>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/autodiff/vjp.h"
#include "adjoint/ir/builder.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

// The adjoint of a value: an expr for a tensor, or one (possibly absent)
// adjoint per field for a tuple.
struct Adjoint;
using AdjointPtr = std::shared_ptr<Adjoint>;
struct Adjoint {
  Expr tensor;
  std::vector<AdjointPtr> fields;
};

AdjointPtr tensor_adjoint(Expr e) {
  auto a = std::make_shared<Adjoint>();
  a->tensor = std::move(e);
  return a;
}

bool is_float_tensor(const Type& t) { return t->is_tensor() && is_float(t->dtype()); }

// Whether an adjoint can flow through a value of this type: a float tensor,
// or a tuple holding one.
bool carries_gradient(const Type& t) {
  if (t->is_tensor()) return is_float(t->dtype());
  for (const auto& f : t->fields())
    if (carries_gradient(f)) return true;
  return false;
}

// zeros(shape, dtype) of a tensor type, unbound.
Expr zeros_of(const Type& t) { return ops::zeros({}, {{"shape", t->shape()}, {"dtype", t->dtype()}}); }

class GradientBuilder {
 public:
  GradientBuilder(const std::string& name, const FunctionNode& fn, const GradientOptions& opt)
      : name_(name), fn_(fn), opt_(opt), bb_(fn.attrs(), /*unique_names=*/false), index_(fn),
        adj_(index_.num_live_defs()) {}

  Function run() {
    share_forward();
    std::vector<Var> required = required_vars();
    mark_relevant(required);
    const Expr& ret = fn_.ret();
    seed(ret);
    const std::vector<uint8_t>& live = index_.live();
    size_t k = adj_.size();  // the live index of the live binding before the current one
    for (size_t i = fn_.bindings().size(); i-- > 0;) {
      if (!live[i]) continue;
      --k;
      if (adj_[k]) backprop(i, adj_[k]);
    }
    std::vector<Expr> grads;
    for (const Var& r : required) grads.push_back(final_adjoint(r));
    Expr grad_tuple = std::make_shared<TupleNode>(std::move(grads));
    return bb_.finish(std::make_shared<TupleNode>(std::vector<Expr>{ret, grad_tuple}));
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw TransformError(str("Gradient of '", name_, "': ", parts...));
  }

  // ---- the forward part: the function's own params and bindings ----

  // With simplify, forward bindings the result does not depend on are left
  // out here rather than removed after.
  void share_forward() {
    const std::vector<uint8_t>& live = index_.live();
    size_t num_live = static_cast<size_t>(std::count(live.begin(), live.end(), 1));
    bb_.reserve((opt_.simplify ? 0 : live.size() - num_live) + 4 * num_live);  // about three adjoint bindings each
    for (const auto& p : fn_.params()) bb_.add_existing_param(p);
    for (size_t i = 0; i < fn_.bindings().size(); ++i)
      if (!opt_.simplify || live[i]) bb_.push_binding(fn_.bindings()[i]);
  }

  // ---- which vars ----

  std::vector<Var> required_vars() {
    std::vector<Var> out;
    if (!opt_.require_grads) {
      for (const auto& p : fn_.params())
        if (is_float_tensor(p->type())) out.push_back(p);
      return out;
    }
    std::unordered_map<std::string, std::vector<Var>> by_name;
    for (const auto& p : fn_.params()) by_name[p->name_hint()].push_back(p);
    for (const auto& b : fn_.bindings()) by_name[b.var->name_hint()].push_back(b.var);
    for (const auto& name : *opt_.require_grads) {
      auto it = by_name.find(name);
      if (it == by_name.end()) fail("'", name, "' is neither a param nor a var of the function");
      if (it->second.size() > 1) fail("the name '", name, "' is ambiguous: ", it->second.size(), " vars carry it");
      const Var& v = it->second[0];
      if (!v->type()->is_tensor()) fail("cannot differentiate with respect to '", name, "' of tuple type ", v->type()->to_string());
      if (!is_float(v->type()->dtype()))
        fail("cannot differentiate with respect to '", name, "' of dtype ", dtype_name(v->type()->dtype()),
             " (only float32 and float64 have gradients)");
      out.push_back(v);
    }
    return out;
  }

  // Only params and live vars have a live index: the others (dead code for
  // this result) get no adjoint, and are never read.
  bool is_relevant(const VarNode* v) const {
    int64_t i = index_.live_index(v);
    return i >= 0 && relevant_[static_cast<size_t>(i)];
  }

  // Vars that are required, or that the result depends on and that depend
  // on a required var: only they need adjoints. Bindings the result does not
  // depend on are skipped unread (most of a wide DAG, typically).
  void mark_relevant(const std::vector<Var>& required) {
    std::vector<uint8_t> is_required(index_.num_live_defs(), 0);
    for (const auto& r : required) {
      int64_t i = index_.live_index(r.get());
      if (i >= 0) is_required[static_cast<size_t>(i)] = 1;
    }
    uses_required_ = index_.live_depends_on([&](const VarNode* v) {
      int64_t i = index_.live_index(v);
      return i >= 0 && is_required[static_cast<size_t>(i)];
    });
    relevant_ = std::move(is_required);
    for (size_t i = 0; i < uses_required_.size(); ++i)
      if (uses_required_[i]) relevant_[static_cast<size_t>(index_.live_index(fn_.bindings()[i].var.get()))] = 1;
  }

  // ---- adjoints ----

  std::string adjoint_name(const Var& v) const { return v->name_hint() + "_adjoint"; }

  Expr bind(const Expr& e, const std::string& hint) { return is_leaf(e) ? e : bb_.emit(e, hint); }

  void seed(const Expr& ret) {
    Expr target = ret;
    Type type = ret->type();
    int ti = opt_.target_index;
    if (type->is_tuple()) {
      int n = static_cast<int>(type->fields().size());
      if (ti < 0 || ti >= n) fail("target_index ", ti, " is out of range for a result of ", n, " fields");
      type = type->fields()[ti];
      if (auto* t = as<TupleNode>(ret)) target = t->fields()[ti];
    } else if (ti != 0) {
      fail("target_index ", ti, " given, but the function returns a single tensor");
    }
    if (!type->is_tensor() || type->ndim() != 0 || !is_float(type->dtype()))
      fail("the target must be a float scalar, got ", type->to_string());
    Expr one = ops::ones({}, {{"shape", Shape{}}, {"dtype", type->dtype()}});
    if (target->type()->is_tuple()) {  // a tuple-typed var: seed one field
      auto a = std::make_shared<Adjoint>();
      a->fields.resize(target->type()->fields().size());
      a->fields[ti] = tensor_adjoint(bb_.emit(one, "target_adjoint"));
      accumulate(target, a);
      return;
    }
    if (Var v = as_var(target)) accumulate(v, tensor_adjoint(bb_.emit(one, adjoint_name(v))));
  }

  // Adds adjoint `a` into the adjoint of `target` (a leaf of the new function).
  void accumulate(const Expr& target, const AdjointPtr& a) {
    if (!a) return;
    if (auto* t = as<TupleNode>(target)) {
      for (size_t i = 0; i < t->fields().size() && i < a->fields.size(); ++i) accumulate(t->fields()[i], a->fields[i]);
      return;
    }
    Var v = as_var(target);
    if (!v || !is_relevant(v.get())) return;
    AdjointPtr& slot = adj_[static_cast<size_t>(index_.live_index(v.get()))];
    slot = merge(slot, a, v->type(), adjoint_name(v));
  }

  AdjointPtr merge(const AdjointPtr& have, const AdjointPtr& add, const Type& type, const std::string& hint) {
    if (!add) return have;
    if (type->is_tensor()) {
      if (!is_float(type->dtype()) || !add->tensor) return have;
      if (!have) return tensor_adjoint(bind(add->tensor, hint));
      Expr sum = ops::add({have->tensor, bind(add->tensor, "lv")});
      return tensor_adjoint(bb_.emit(sum, hint));
    }
    auto out = std::make_shared<Adjoint>();
    out->fields.resize(type->fields().size());
    for (size_t i = 0; i < out->fields.size(); ++i)
      out->fields[i] = merge(have && i < have->fields.size() ? have->fields[i] : nullptr,
                             i < add->fields.size() ? add->fields[i] : nullptr, type->fields()[i], hint);
    return out;
  }

  // The adjoint as an expr of `type`; absent parts become zeros.
  Expr materialize(const AdjointPtr& a, const Type& type) {
    if (type->is_tensor()) {
      if (a && a->tensor) return a->tensor;
      return bb_.emit(zeros_of(type), "zero_adjoint");
    }
    std::vector<Expr> fields;
    for (size_t i = 0; i < type->fields().size(); ++i)
      fields.push_back(materialize(a && i < a->fields.size() ? a->fields[i] : nullptr, type->fields()[i]));
    return std::make_shared<TupleNode>(std::move(fields));
  }

  Expr final_adjoint(const Var& v) {
    int64_t i = index_.live_index(v.get());
    if (i >= 0 && adj_[static_cast<size_t>(i)] && adj_[static_cast<size_t>(i)]->tensor)
      return adj_[static_cast<size_t>(i)]->tensor;
    return bb_.emit(zeros_of(v->type()), adjoint_name(v));
  }

  AdjointPtr to_adjoint(const Expr& e, const Type& type) {
    if (!e) return nullptr;
    if (type->is_tensor()) return tensor_adjoint(e);
    auto* t = as<TupleNode>(e);
    if (!t) return tensor_adjoint(e);
    auto a = std::make_shared<Adjoint>();
    for (size_t i = 0; i < t->fields().size(); ++i) a->fields.push_back(to_adjoint(t->fields()[i], type->fields()[i]));
    return a;
  }

  // Passes the adjoint `a` of binding i's var on to what its value uses.
  void backprop(size_t i, AdjointPtr a) {
    const Binding& b = fn_.bindings()[i];
    const Expr& value = b.value;
    switch (value->kind()) {
      case ExprKind::kVar:
      case ExprKind::kTuple:
        accumulate(value, a);
        return;
      case ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const TupleGetItemNode&>(*value);
        auto whole = std::make_shared<Adjoint>();
        whole->fields.resize(g.tuple()->type()->fields().size());
        whole->fields[g.index()] = a;
        accumulate(g.tuple(), whole);
        return;
      }
      case ExprKind::kCall:
        if (uses_required_[i]) backprop_call(b.var, static_cast<const CallNode&>(*value), a);
        return;
      case ExprKind::kConstant:
        return;
    }
  }

  void backprop_call(const Var& v, const CallNode& call, const AdjointPtr& a) {
    const OpDef& op = call.op();
    if (!op.differentiable || !carries_gradient(v->type())) return;
    if (!op.vjp) fail("op '", op.name, "' has no gradient rule (binding '", v->name_hint(), "')");
    VJPContext ctx(bb_, call, v, materialize(a, v->type()));
    std::vector<Expr> arg_adjoints;
    try {
      arg_adjoints = op.vjp(ctx);
    } catch (const TypeInferenceError& e) {
      fail("the gradient rule of '", op.name, "' failed at binding '", v->name_hint(), "': ", e.what());
    }
    for (size_t i = 0; i < call.args().size() && i < arg_adjoints.size(); ++i)
      accumulate(call.args()[i], to_adjoint(arg_adjoints[i], call.args()[i]->type()));
  }

  const std::string& name_;
  const FunctionNode& fn_;
  const GradientOptions& opt_;
  FunctionBuilder bb_;
  DataflowIndex index_;
  std::vector<uint8_t> relevant_;       // by live index: the var needs an adjoint
  std::vector<uint8_t> uses_required_;  // by binding: live, and its value depends on a required var
  std::vector<AdjointPtr> adj_;         // by live index
};

}  // namespace

Module gradient(const Module& mod, const GradientOptions& options) {
  Function fn = mod->lookup(options.func_name);
  if (!fn) {
    std::string names;
    for (const auto& kv : mod->functions()) names += (names.empty() ? "" : ", ") + kv.first;
    throw TransformError(str("Gradient: the module has no function '", options.func_name, "' (it has: ",
                             names.empty() ? std::string("none") : names, ")"));
  }
  std::string adjoint_name = options.func_name + "_adjoint";
  if (mod->contains(adjoint_name))
    throw TransformError(str("Gradient: the module already has a function '", adjoint_name,
                             "'; remove or rename it first (Gradient does not replace functions)"));
  Function adjoint = GradientBuilder(options.func_name, *fn, options).run();
  count_pass_stat("adjoint bindings", static_cast<int64_t>(adjoint->bindings().size()));
  if (options.simplify) {  // dead forward bindings were left out, so the rewrites see only what the adjoint needs
    {
      // One walk applies SimplifyGradient's rules and binds equal values once
      // (EliminateCommonSubexpr's work, reported on its own line).
      PassStatsScope stage("SimplifyGradient");
      adjoint = rewrite_simplify_gradient(adjoint, /*share_values=*/true);
      split_pass_stat("bindings merged", "EliminateCommonSubexpr");
    }
    PassStatsScope stage("DeadCodeElimination");
    adjoint = dead_code_elimination(std::move(adjoint));
  }
  return mod->with_function(adjoint_name, adjoint);
}

}  // namespace aj
