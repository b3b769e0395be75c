// FLOP estimates (see analysis/flops.h): one walk over the bindings summing
// op FLOP rules per op, and the substitution of symbol values into the sums.
#include "adjoint/analysis/flops.h"

#include <unordered_map>

#include "adjoint/analysis/compile_time.h"
#include "adjoint/analysis/dataflow.h"
#include "adjoint/op/registry.h"

namespace aj {
namespace {

// value ** power, as a Dim (overflow throws SizeOverflowError).
Dim power(const Dim& value, int power) {
  Dim out(1);
  for (int i = 0; i < power; ++i) out = out * value;
  return out;
}

// d with the given symbols replaced, term by term.
Dim substitute_terms(const Dim& d, const std::map<std::string, int64_t>& values) {
  Dim out(0);
  for (const DimTerm& term : d.terms()) {
    Dim product(term.coeff);
    for (const auto& [symbol, exponent] : term.monomial) {
      auto it = values.find(symbol);
      product = product * power(it == values.end() ? Dim::symbol(symbol) : Dim(it->second), exponent);
    }
    out = out + product;
  }
  return out;
}

}  // namespace

FlopCount count_flops(const FunctionNode& fn, bool compile_time_free) {
  std::vector<uint8_t> free_binding(fn.bindings().size(), 0);
  if (compile_time_free) free_binding = computable_bindings(DataflowIndex(fn));
  FlopCount out;
  std::unordered_map<const OpDef*, size_t> slot;  // op -> its entry in by_op
  for (size_t b = 0; b < fn.bindings().size(); ++b) {
    const Expr& value = fn.bindings()[b].value;
    if (value->kind() != ExprKind::kCall) continue;
    const auto& call = static_cast<const CallNode&>(*value);
    auto [it, first] = slot.emplace(&call.op(), out.by_op.size());
    if (first) out.by_op.emplace_back(call.op().name, Dim(0));
    if (free_binding[b] || !call.op().flops) continue;
    try {
      Dim flops = call.op().flops(call);
      out.by_op[it->second].second = out.by_op[it->second].second + flops;
      out.total = out.total + flops;
    } catch (const SizeOverflowError& e) {
      throw SizeOverflowError(str("the FLOP count overflows int64 at binding ", b, " '",
                                  fn.bindings()[b].var->name_hint(), "' (", call.op().name, "): ", e.what()));
    }
  }
  return out;
}

std::set<std::string> function_symbols(const FunctionNode& fn) {
  std::set<std::string> out;
  for (const Var& p : fn.params()) add_type_symbols(*p->type(), false, out);
  for (const Binding& b : fn.bindings()) add_type_symbols(*b.var->type(), false, out);
  return out;
}

Dim substitute_symbols(const Dim& d, const std::map<std::string, int64_t>& values) {
  if (d.is_const()) return d;
  try {
    return substitute_terms(d, values);
  } catch (const SizeOverflowError& e) {
    throw SizeOverflowError(str("the FLOP count ", d.to_string(), " overflows int64 with the given dims: ", e.what()));
  }
}

}  // namespace aj
