// LiftTransformParams (DESIGN.md §7): for each function f with num_input, a
// new function f_transform_params(weights...) computes every weight-dependent
// compile-time value f needs and returns them as a tuple; f then takes
// (inputs..., transformed...) and keeps its num_input.
//   1. The compile-time analysis (analysis/compile_time.h) marks the bindings
//      that use only weights and constants and depend on a weight: the
//      liftable ones. Constant-only bindings (zeros(...)) are not lifted.
//   2. One backward sweep from f's return decides what f keeps: a needed
//      liftable tensor binding becomes a new param of f (its boundary), a
//      needed weight passes through as one; every other needed binding
//      stays. A liftable binding of tuple type stays in f as well (the
//      executor takes tensor params only), and its operands become params.
//   3. One backward sweep from the boundary decides what f_transform_params
//      holds: the bindings the boundary values need (liftable ones and the
//      constant-only ones they use, which may so appear in both functions).
//   In both sweeps an item of a tuple written inline (a = (w, x)[0]) is
//   bound to the field it reads (a = w), so each function needs only what
//   the item reads; in f_transform_params so is an item of a tuple that f
//   keeps (t = (x, w); a = t[1] lifted as a = w).
//   A symbolic dim f still needs that no param of f binds (the executor
//   binds a symbol from a param dim k or a*k + b) makes a weight that binds
//   it pass through as well.
// Both sweeps skip what nothing needs, so dead code leaves both functions.
// A function whose split would lift nothing and pass every weight through in
// order is left alone when the module already has its f_transform_params:
// the pass's output is its own fixed point. So is a function whose weights
// do not bind every symbol of their dims (a weight of n*n beside an input
// of n): f_transform_params, taking the weights alone, could not be called.
// Vars are shared between the two functions (no renaming): each function
// binds each of its vars once. Linear in the function's size.
#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "adjoint/analysis/compile_time.h"
#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/names.h"
#include "adjoint/ir/printer.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"

namespace aj {
namespace {

// The bindings one function of the split holds (per binding), and the tuple
// items among them bound there to the field they read instead of their
// value, as (binding, field), by descending binding.
struct PlanPart {
  std::vector<uint8_t> holds;
  std::vector<std::pair<size_t, Expr>> retargeted;
};

// Where each definition of f goes.
struct LiftPlan {
  PlanPart main;              // what stays in f
  PlanPart transform;         // what f_transform_params computes
  std::vector<Var> boundary;  // f's new params: needed weights, then lifted binding vars
};

// The field binding b's value reads when it is a tuple item the function it
// goes to binds to that field: one of a tuple written inline (a = (w, x)[0]
// reads w alone, and the function may not have x), or of a tuple var whose
// binding that function does not hold (`holds_tuple` false). Else nullptr:
// the binding is copied as it is. Reads the value node of tuple items only.
template <class HoldsTuple>
const Expr* field_to_read(const DataflowIndex& index, size_t b, HoldsTuple&& holds_tuple) {
  if (index.binding_kind(b) != DefKind::kTupleGetItem) return nullptr;
  const auto& item = static_cast<const TupleGetItemNode&>(*index.function().bindings()[b].value);
  if (item.tuple()->kind() != ExprKind::kTuple) {
    const auto* tuple = as<VarNode>(item.tuple());
    int64_t t = tuple ? index.binding_index(tuple) : -1;
    if (t < 0 || holds_tuple(static_cast<size_t>(t))) return nullptr;
  }
  return tuple_item_source(index, item);
}

// The symbols f keeps using that none of its params binds: `used` and
// `bound` hold those of its kept and lifted bindings (collected by the sweep
// that decides them); the params are added once `main_needs` marks the
// weights f takes.
std::set<std::string> unbound_symbols(const FunctionNode& fn, const std::vector<uint8_t>& main_needs,
                                      std::set<std::string> used, std::set<std::string> bound) {
  std::unordered_set<const TypeNode*> seen;  // types are interned: many params, few types
  for (size_t p = 0; p < fn.params().size(); ++p) {
    if ((p >= fn.num_input() && !main_needs[p]) || !seen.insert(fn.params()[p]->type().get()).second) continue;
    add_param_bound_symbols(*fn.params()[p]->type(), bound);
    add_type_symbols(*fn.params()[p]->type(), false, used);
  }
  std::set<std::string> out;
  for (const std::string& s : used)
    if (!bound.count(s)) out.insert(s);
  return out;
}

// Marks, in main_needs, a weight binding each symbol of `missing`.
void pass_weights_binding(const FunctionNode& fn, std::set<std::string> missing, std::vector<uint8_t>& main_needs) {
  for (size_t p = fn.num_input(); p < fn.params().size() && !missing.empty(); ++p) {
    std::set<std::string> binds;
    add_param_bound_symbols(*fn.params()[p]->type(), binds);
    for (const std::string& s : binds)
      if (missing.erase(s)) main_needs[p] = 1;
  }
}

// Marks, by definition index, each var e uses.
void mark_uses(const DataflowIndex& index, const Expr& e, std::vector<uint8_t>& marked) {
  for_each_var_use(e, [&](const VarNode* v) {
    int64_t d = index.def_index(v);
    if (d >= 0) marked[static_cast<size_t>(d)] = 1;
  });
}

// Marks each var binding b's value uses (from the index's operand arrays).
void mark_operands(const DataflowIndex& index, size_t b, std::vector<uint8_t>& marked) {
  for (int32_t d : index.operand_defs(b))
    if (d >= 0) marked[static_cast<size_t>(d)] = 1;
}

// Puts binding b in `part`, bound to `field` when there is one, and marks in
// `needs` the vars it then uses.
void hold(PlanPart& part, const DataflowIndex& index, size_t b, const Expr* field, std::vector<uint8_t>& needs) {
  part.holds[b] = 1;
  if (field) {
    part.retargeted.emplace_back(b, *field);
    mark_uses(index, *field, needs);
  } else {
    mark_operands(index, b, needs);
  }
}

LiftPlan plan_lift(const FunctionNode& fn, const DataflowIndex& index) {
  const auto& bindings = fn.bindings();
  const size_t num_params = fn.params().size(), num_input = fn.num_input();
  std::vector<uint8_t> liftable = weight_dependent_bindings(index, computable_bindings(index));
  LiftPlan plan{{std::vector<uint8_t>(bindings.size(), 0), {}}, {std::vector<uint8_t>(bindings.size(), 0), {}}, {}};
  std::vector<uint8_t> main_needs(index.num_defs(), 0), lifted_needs(index.num_defs(), 0);
  mark_uses(index, fn.ret(), main_needs);
  // The symbols of the bindings f keeps or takes as params, and those a
  // lifted var binds as f's param. Both sweeps read the index's flat
  // arrays, not the nodes (but for an item of a tuple). Every tuple var
  // binding f needs stays in f.
  auto in_main = [](size_t) { return true; };
  std::set<std::string> used, bound;
  std::unordered_set<const TypeNode*> used_types, bound_types;  // types are interned: each read once
  for (size_t b = bindings.size(); b-- > 0;) {
    if (!main_needs[num_params + b]) continue;
    const TypeNode& type = *index.binding_type(b);
    if (liftable[b] && type.is_tensor()) {
      lifted_needs[num_params + b] = 1;
      if (bound_types.insert(&type).second) add_param_bound_symbols(type, bound);
    } else {
      hold(plan.main, index, b, field_to_read(index, b, in_main), main_needs);
    }
    if (used_types.insert(&type).second) add_type_symbols(type, false, used);
  }
  pass_weights_binding(fn, unbound_symbols(fn, main_needs, std::move(used), std::move(bound)), main_needs);
  for (size_t p = num_input; p < num_params; ++p)
    if (main_needs[p]) plan.boundary.push_back(fn.params()[p]);
  for (size_t b = 0; b < bindings.size(); ++b)
    if (lifted_needs[num_params + b]) plan.boundary.push_back(bindings[b].var);
  auto lifted = [&liftable](size_t t) { return liftable[t] != 0; };
  for (size_t b = bindings.size(); b-- > 0;)
    if (lifted_needs[num_params + b]) hold(plan.transform, index, b, field_to_read(index, b, lifted), lifted_needs);
  return plan;
}

// Appends binding b as `part` holds it: bound to its field when it is the
// next of the part's retargets (`left` of them not yet used, taken from the
// back), else as it is.
void append(const PlanPart& part, size_t b, const Binding& binding, size_t& left, std::vector<Binding>& out) {
  if (left > 0 && part.retargeted[left - 1].first == b)
    out.push_back(Binding{binding.var, part.retargeted[--left].second});
  else
    out.push_back(binding);
}

// The bindings f keeps and those f_transform_params computes, copied in one
// walk. A copy touches only the var and value nodes (their reference
// counts), so only those of bindings that are copied are fetched ahead.
std::pair<std::vector<Binding>, std::vector<Binding>> split_bindings(const FunctionNode& fn, const LiftPlan& plan) {
  constexpr size_t kAhead = 16;
  const auto& bindings = fn.bindings();
  const size_t n = bindings.size();
  auto count = [](const std::vector<uint8_t>& marks) {
    size_t k = 0;
    for (uint8_t m : marks) k += m;
    return k;
  };
  std::vector<Binding> main, transform;
  main.reserve(count(plan.main.holds));
  transform.reserve(count(plan.transform.holds));
  size_t main_left = plan.main.retargeted.size(), transform_left = plan.transform.retargeted.size();
  for (size_t b = 0; b < n; ++b) {
    if (b + kAhead < n && (plan.main.holds[b + kAhead] || plan.transform.holds[b + kAhead])) {
      __builtin_prefetch(bindings[b + kAhead].var.get(), 1);
      __builtin_prefetch(bindings[b + kAhead].value.get(), 1);
    }
    if (plan.main.holds[b]) append(plan.main, b, bindings[b], main_left, main);
    if (plan.transform.holds[b]) append(plan.transform, b, bindings[b], transform_left, transform);
  }
  return {std::move(main), std::move(transform)};
}

// What Pass.explain reports of one function's split: the bindings lifted
// and the weights passed through to f (counted from the plan, before f's
// lifted params may be renamed).
struct LiftCounts {
  int64_t lifted = 0;
  int64_t passed = 0;
};

LiftCounts count_lift(const FunctionNode& fn, const LiftPlan& plan) {
  LiftCounts out;
  for (uint8_t t : plan.transform.holds) out.lifted += t;
  std::unordered_set<const VarNode*> weights;
  for (size_t p = fn.num_input(); p < fn.params().size(); ++p) weights.insert(fn.params()[p].get());
  for (const Var& v : plan.boundary) out.passed += static_cast<int64_t>(weights.count(v.get()));
  return out;
}

void report_lift(const LiftCounts& counts) {
  count_pass_stat("functions split");
  count_pass_stat("bindings lifted", counts.lifted);
  count_pass_stat("weights passed through", counts.passed);
}

// Per definition of fn, 1 when its value reads a weight that training
// updates (one not in fn's frozen attr), directly or through bindings; an
// item of a tuple literal reads its field alone (t = (w, running_var);
// t[1] reads no trained weight).
std::vector<uint8_t> reads_trained_weight(const FunctionNode& fn, const DataflowIndex& index) {
  std::vector<std::string> names = fn.frozen_names();
  std::unordered_set<std::string> frozen(names.begin(), names.end());
  const size_t num_params = fn.params().size();
  std::vector<uint8_t> trained(index.num_defs(), 0);
  for (size_t p = fn.num_input(); p < num_params; ++p) trained[p] = !frozen.count(fn.params()[p]->name_hint());
  auto trained_use = [&](const Expr& e) {
    bool any = false;
    for_each_var_use(e, [&](const VarNode* v) {
      int64_t d = index.def_index(v);
      any = any || (d >= 0 && trained[static_cast<size_t>(d)]);
    });
    return any;
  };
  for (size_t b = 0; b < fn.bindings().size(); ++b) {
    const Expr* field = nullptr;
    if (index.binding_kind(b) == DefKind::kTupleGetItem)
      field = tuple_item_source(index, static_cast<const TupleGetItemNode&>(*fn.bindings()[b].value));
    if (field) {
      trained[num_params + b] = trained_use(*field);
      continue;
    }
    for (int32_t d : index.operand_defs(b))
      if (d >= 0 && trained[static_cast<size_t>(d)]) {
        trained[num_params + b] = 1;
        break;
      }
  }
  return trained;
}

// fn's attrs for f as lifted (its params `main_params`, `frozen_param`
// saying which are frozen): its frozen attr names the weights of f that
// read no trained weight of fn: frozen weights passed through, and lifted
// values computed from frozen weights and constants alone (a BatchNorm's
// rsqrt(running_var + eps)), so that training f leaves them as training fn
// left what they are computed from. The attr goes when it names none.
FuncAttrs lifted_attrs(const FunctionNode& fn, const std::vector<Var>& main_params,
                       const std::vector<uint8_t>& frozen_param) {
  FuncAttrs attrs;
  for (const auto& [name, value] : fn.attrs())
    if (name != "frozen") attrs.emplace_back(name, value);
  std::string kept;
  for (size_t p = 0; p < main_params.size(); ++p)
    if (frozen_param[p]) kept += (kept.empty() ? "" : ", ") + main_params[p]->name_hint();
  if (!kept.empty()) attrs.emplace_back("frozen", kept);
  return attrs;
}

// Per param of f as lifted, 1 when it is a weight that reads no trained
// weight of fn: also when fn freezes nothing, a lifted value made of
// constants alone (zeros(("n", 3)), lifted as n is a weight's dim), which
// training must not change.
std::vector<uint8_t> frozen_params(const FunctionNode& fn, const DataflowIndex& index,
                                   const std::vector<Var>& main_params) {
  std::vector<uint8_t> out(main_params.size(), 0);
  std::vector<uint8_t> trained = reads_trained_weight(fn, index);
  for (size_t p = fn.num_input(); p < main_params.size(); ++p)
    out[p] = !trained[static_cast<size_t>(index.def_index(main_params[p].get()))];
  return out;
}

// f's lifted params (those past `first_lifted`) named as the printer
// prints them (printed_param_names): one whose name an earlier param has
// (Gradient binds many vars 'lv') becomes a new var named lv_1, lv_2, ...
// (the first that no var of f has), one whose name is no identifier a var
// named as one, in f's bindings and return too. So f's weights are told
// apart by name, as the frozen attr and a Trainer's params tell them.
void give_lifted_params_distinct_names(std::vector<Var>& params, size_t first_lifted, std::vector<Binding>& bindings,
                                       Expr& ret) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(params.size());
  bool clash = false;
  for (size_t i = 0; i < params.size(); ++i)
    if ((!seen.insert(params[i]->name_hint()).second || !is_valid_name(params[i]->name_hint())) && i >= first_lifted)
      clash = true;
  if (!clash) return;  // the usual case: no name of f's bindings is read
  Function f = std::make_shared<FunctionNode>(params, std::move(bindings), ret);
  std::vector<std::string> printed = printed_param_names(*f);
  bindings = std::move(*FunctionNode::sole_bindings(f));
  std::unordered_map<const VarNode*, Expr> renamed;
  for (size_t i = first_lifted; i < params.size(); ++i) {
    if (printed[i] == params[i]->name_hint()) continue;
    Var fresh = std::make_shared<VarNode>(printed[i], params[i]->type());
    renamed.emplace(params[i].get(), fresh);
    params[i] = fresh;
  }
  auto replacement = [&renamed](const VarNode* v) -> const Expr* {
    auto it = renamed.find(v);
    return it == renamed.end() ? nullptr : &it->second;
  };
  for (Binding& b : bindings) b.value = substitute(b.value, replacement);
  ret = substitute(ret, replacement);
}

// f and f_transform_params of a function with num_input, and what explain
// reports of the split.
struct Split {
  Function main, transform;
  LiftCounts counts;
};

Split lift(const Function& fn) {
  DataflowIndex index(*fn);
  LiftPlan plan = plan_lift(*fn, index);
  LiftCounts counts = pass_stats() ? count_lift(*fn, plan) : LiftCounts{};
  auto first_weight = fn->params().begin() + static_cast<std::ptrdiff_t>(fn->num_input());
  std::vector<Var> weights(first_weight, fn->params().end());
  std::vector<Var> main_params(fn->params().begin(), first_weight);
  main_params.insert(main_params.end(), plan.boundary.begin(), plan.boundary.end());
  Expr returned = std::make_shared<TupleNode>(std::vector<Expr>(plan.boundary.begin(), plan.boundary.end()));
  auto [main_bindings, transform_bindings] = split_bindings(*fn, plan);
  auto transform = std::make_shared<FunctionNode>(std::move(weights), std::move(transform_bindings),
                                                  std::move(returned));
  std::vector<uint8_t> frozen = frozen_params(*fn, index, main_params);
  size_t first_lifted = fn->num_input();
  while (first_lifted < main_params.size() && index.is_param(main_params[first_lifted].get())) ++first_lifted;
  Expr ret = fn->ret();
  give_lifted_params_distinct_names(main_params, first_lifted, main_bindings, ret);
  FuncAttrs attrs = lifted_attrs(*fn, main_params, frozen);
  auto main = std::make_shared<FunctionNode>(std::move(main_params), std::move(main_bindings), std::move(ret),
                                             std::move(attrs));
  return {main, transform, counts};
}

// Whether the split of fn is no split: f_transform_params computes nothing
// and f takes its params as they were (each weight passed through, in order).
bool lifts_nothing(const FunctionNode& fn, const FunctionNode& main, const FunctionNode& transform) {
  return transform.bindings().empty() && main.params() == fn.params();
}

// Whether the weights of fn bind every symbol of their own dims, as the
// executor binds symbols (a dim k or a*k + b): else f_transform_params,
// which takes the weights alone, could never be called (a weight of n*n
// beside an input of n).
bool weights_bind_their_symbols(const FunctionNode& fn) {
  std::set<std::string> used, bound;
  std::unordered_set<const TypeNode*> seen;  // types are interned: many weights, few types
  for (size_t p = fn.num_input(); p < fn.params().size(); ++p) {
    const TypeNode* t = fn.params()[p]->type().get();
    if (!seen.insert(t).second) continue;
    add_type_symbols(*t, false, used);
    add_param_bound_symbols(*t, bound);
  }
  return std::includes(bound.begin(), bound.end(), used.begin(), used.end());
}

// `base`, or base_1, base_2, ... : the first not in `taken`, which then holds it.
std::string unique_name(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string name = base;
  for (size_t i = 1; taken.count(name); ++i) name = str(base, "_", i);
  taken.insert(name);
  return name;
}

}  // namespace

Module lift_transform_params(const Module& mod) {
  std::unordered_set<std::string> taken;
  for (const auto& [name, fn] : mod->functions()) taken.insert(name);
  std::vector<std::pair<std::string, Function>> out;
  bool changed = false;
  for (const auto& [name, fn] : mod->functions()) {
    if (!fn->attr("num_input")) {
      out.emplace_back(name, fn);
      continue;
    }
    if (!weights_bind_their_symbols(*fn)) {
      count_pass_stat("functions left: a weight's dim has a symbol the weights do not bind");
      out.emplace_back(name, fn);
      continue;
    }
    Split split = lift(fn);
    if (mod->contains(name + "_transform_params") && lifts_nothing(*fn, *split.main, *split.transform)) {
      out.emplace_back(name, fn);  // lifted before: a second run changes nothing
      continue;
    }
    report_lift(split.counts);
    out.emplace_back(name, split.main);
    out.emplace_back(unique_name(name + "_transform_params", taken), split.transform);
    changed = true;
  }
  return changed ? std::make_shared<ModuleNode>(std::move(out)) : mod;
}

}  // namespace aj
