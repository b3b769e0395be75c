// The compile-time analysis (see analysis/compile_time.h): two forward
// passes over the bindings, one for "uses only weights and has a shape the
// weights fix" and one (DataflowIndex::depends_on) for "uses a weight or a
// symbol only weights bind", both reading the index's operand arrays.
#include "adjoint/analysis/compile_time.h"

namespace aj {
namespace {

bool is_weight(const DataflowIndex& index, const VarNode* v) {
  return index.param_index(v) >= static_cast<int64_t>(index.function().num_input());
}

// The symbols params [first, last) bind alone.
std::set<std::string> bound_symbols(const FunctionNode& fn, size_t first, size_t last) {
  std::set<std::string> out;
  for (size_t p = first; p < last; ++p) add_type_symbols(*fn.params()[p]->type(), true, out);
  return out;
}

// How many vars tuple_item_source follows before giving up: a path through
// nested tuples is as long as their nesting, but one through aliases
// (a = b) could be as long as the function.
constexpr int kMaxItemPathSteps = 64;

const Expr* field_read(const DataflowIndex& index, const TupleGetItemNode& item, int& steps);

// e seen through the vars bound to tuples, to items of tuple literals and to
// other vars: the tuple literal or other expr it holds; nullptr when the
// path ends at something else or runs out of `steps`.
const Expr* resolved(const DataflowIndex& index, const Expr* e, int& steps) {
  while (e && steps-- > 0) {
    if ((*e)->kind() == ExprKind::kTuple) return e;
    if (const auto* item = as<TupleGetItemNode>(*e)) {
      e = field_read(index, *item, steps);
      continue;
    }
    const auto* v = as<VarNode>(*e);
    const Expr* value = v ? index.value(v) : nullptr;
    if (!value) return e;
    e = value;
  }
  return nullptr;
}

// The field of the tuple literal `item` reads (through resolved), or nullptr.
const Expr* field_read(const DataflowIndex& index, const TupleGetItemNode& item, int& steps) {
  const Expr* tuple = resolved(index, &item.tuple(), steps);
  if (!tuple || (*tuple)->kind() != ExprKind::kTuple) return nullptr;
  return &static_cast<const TupleNode*>(tuple->get())->fields()[static_cast<size_t>(item.index())];
}

}  // namespace

bool symbols_within(const TypeNode& t, const std::set<std::string>& symbols) {
  std::set<std::string> used;
  add_type_symbols(t, false, used);
  for (const std::string& s : used)
    if (!symbols.count(s)) return false;
  return true;
}

std::set<std::string> weight_symbols(const FunctionNode& fn) {
  return bound_symbols(fn, fn.num_input(), fn.params().size());
}

const Expr* tuple_item_source(const DataflowIndex& index, const TupleGetItemNode& item) {
  int steps = kMaxItemPathSteps;
  return field_read(index, item, steps);
}

void add_type_symbols(const TypeNode& t, bool bare_only, std::set<std::string>& out) {
  if (!t.is_tensor()) {
    for (const Type& f : t.fields()) add_type_symbols(*f, bare_only, out);
    return;
  }
  for (const Dim& d : t.shape()) {
    if (d.is_const()) continue;
    std::vector<std::string> symbols = d.symbols();
    if (!bare_only) out.insert(symbols.begin(), symbols.end());
    else if (d == Dim::symbol(symbols.front())) out.insert(symbols.front());
  }
}

void add_param_bound_symbols(const TypeNode& t, std::set<std::string>& out) {
  if (!t.is_tensor()) {
    for (const Type& f : t.fields()) add_param_bound_symbols(*f, out);
    return;
  }
  for (const Dim& d : t.shape()) {
    if (std::optional<LinearDim> lin = as_linear_dim(d)) out.insert(lin->symbol);
    else if (std::optional<std::string> k = growing_symbol(d)) out.insert(*k);
  }
}

std::vector<uint8_t> computable_bindings(const DataflowIndex& index) {
  const FunctionNode& fn = index.function();
  const size_t num_params = fn.params().size();
  const std::set<std::string> by_weights = weight_symbols(fn);
  std::vector<uint8_t> known(index.num_defs(), 0), out(fn.bindings().size(), 0);
  for (size_t p = fn.num_input(); p < num_params; ++p) known[p] = 1;
  auto is_known = [&](int64_t d) { return d >= 0 && known[static_cast<size_t>(d)]; };
  for (size_t b = 0; b < fn.bindings().size(); ++b) {
    bool all = symbols_within(*index.binding_type(b), by_weights);
    const Expr* source = nullptr;
    if (all && index.binding_kind(b) == DefKind::kTupleGetItem)
      source = tuple_item_source(index, static_cast<const TupleGetItemNode&>(*fn.bindings()[b].value));
    if (all && source)
      for_each_var_use(*source, [&](const VarNode* v) { all = all && is_known(index.def_index(v)); });
    else if (all)
      for (int32_t d : index.operand_defs(b)) all = all && is_known(d);
    out[b] = known[num_params + b] = all;
  }
  return out;
}

std::vector<uint8_t> weight_dependent_bindings(const DataflowIndex& index, const std::vector<uint8_t>& computable) {
  const FunctionNode& fn = index.function();
  const std::set<std::string> input_symbols = bound_symbols(fn, 0, fn.num_input());
  // Per computable binding: a symbol of its type is not the inputs'. Found
  // while the sweep below reads the binding's var (the sweep asks only for
  // bindings that do not already depend on a weight, the only ones the
  // result needs it for), not by a walk of its own.
  std::vector<uint8_t> weight_shaped(computable.size(), 0);
  std::vector<uint8_t> out = index.depends_on([&](const VarNode* v) {
    int64_t b = index.binding_index(v);
    if (b < 0) return is_weight(index, v);
    const size_t i = static_cast<size_t>(b);
    weight_shaped[i] = computable[i] && !symbols_within(*index.binding_type(i), input_symbols);
    return weight_shaped[i] != 0;
  });
  for (size_t b = 0; b < out.size(); ++b) out[b] = computable[b] && (out[b] || weight_shaped[b]);
  return out;
}

}  // namespace aj
