// FLOP estimates (see analysis/flops.h): one walk over the bindings summing
// op FLOP rules per op, each call's count with the given symbol values put in
// before it joins the sums; and the substitution of symbol values into dims.
#include "adjoint/analysis/flops.h"

#include <limits>
#include <map>
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

// t with the given symbols replaced in its shapes.
Type substituted_type(const Type& t, const SymbolValues& values) {
  if (t->is_tuple()) {
    std::vector<Type> fields;
    for (const Type& f : t->fields()) fields.push_back(substituted_type(f, values));
    return TypeNode::tuple(std::move(fields));
  }
  Shape shape;
  for (const Dim& d : t->shape()) shape.push_back(substitute_symbols(d, values));
  return TypeNode::tensor(std::move(shape), t->dtype());
}

// A call operand with the given symbols replaced in its type: a var of the
// substituted type, a tuple of substituted fields; constants have no symbols.
Expr substituted_operand(const Expr& e, const SymbolValues& values) {
  if (const auto* v = as<VarNode>(e))
    return std::make_shared<VarNode>(v->name_hint(), substituted_type(v->type(), values));
  if (const auto* t = as<TupleNode>(e)) {
    std::vector<Expr> fields;
    for (const Expr& f : t->fields()) fields.push_back(substituted_operand(f, values));
    return std::make_shared<TupleNode>(std::move(fields));
  }
  return e;
}

// The call's FLOP rule applied to a copy of it whose types have the given
// symbols replaced: its count when the polynomial over the symbols is past
// Dim's limits (a rank-65 exp has degree 65) but the values bring it within.
Dim substituted_call_flops(const CallNode& call, const SymbolValues& values) {
  std::vector<Expr> args;
  for (const Expr& a : call.args()) args.push_back(substituted_operand(a, values));
  CallNode copy(&call.op(), std::move(args), call.attrs(), substituted_type(call.type(), values));
  return call.op().flops(copy);
}

// Where in fn a count is: "binding b 'var' (op)".
std::string binding_place(const FunctionNode& fn, size_t b, const CallNode& call) {
  return str("binding ", b, " '", fn.bindings()[b].var->name_hint(), "' (", call.op().name, ")");
}

// The error for a count past Dim's limits, `what` saying which count.
TypeInferenceError too_large(const std::string& what, const DimLimitError& e) {
  return TypeInferenceError(str("the FLOP count ", what, " is a polynomial too large to represent (", e.what(),
                                "); give dims= values for its symbols to count it as a number"));
}

// The rule's count of the call: its polynomial, or, when that is past Dim's
// limits and values are given, the count of the substituted call (so
// already with the values put in).
Dim rule_flops(const FunctionNode& fn, size_t b, const CallNode& call, const SymbolValues& values) {
  try {
    return call.op().flops(call);
  } catch (const DimLimitError& e) {
    if (values.empty()) throw too_large("at " + binding_place(fn, b, call), e);
  } catch (const SizeOverflowError& e) {
    throw SizeOverflowError(str("the FLOP count overflows int64 at ", binding_place(fn, b, call), ": ", e.what()));
  }
  try {
    return substituted_call_flops(call, values);
  } catch (const DimLimitError& e) {
    throw too_large("at " + binding_place(fn, b, call) + " with the given dims", e);
  } catch (const SizeOverflowError& e) {
    throw SizeOverflowError(str("the FLOP count overflows int64 with the given dims at ", binding_place(fn, b, call),
                                ": ", e.what()));
  }
}

// One call's count with the given symbols replaced, before it joins any sum.
Dim call_flops(const FunctionNode& fn, size_t b, const CallNode& call, const SymbolValues& values) {
  Dim flops = rule_flops(fn, b, call, values);
  try {
    return substitute_symbols(flops, values);
  } catch (const SizeOverflowError& e) {
    // A term past 128 bits may be one of many that cancel ((m - k)**6
    // expanded, at m = 2**42, k = m - 1, is 1): the call counted with the
    // values put in its shapes first is what they sum to, when that fits.
    try {
      return substitute_symbols(substituted_call_flops(call, values), values);
    } catch (const SizeOverflowError&) {
    }
    throw SizeOverflowError(str("the FLOP count ", flops.to_string(), " overflows int64 with the given dims at ",
                                binding_place(fn, b, call), ": ", e.what()));
  }
}

// Adds binding b's count to its op's and to the total.
void add_count(FlopCount& out, size_t op_slot, const Dim& flops, const FunctionNode& fn, size_t b,
               const CallNode& call) {
  try {
    out.by_op[op_slot].second = out.by_op[op_slot].second + flops;
    out.total = out.total + flops;
  } catch (const DimLimitError& e) {
    throw too_large("summed up to " + binding_place(fn, b, call), e);
  } catch (const SizeOverflowError& e) {
    throw SizeOverflowError(str("the FLOP count overflows int64 at ", binding_place(fn, b, call), ": ", e.what()));
  }
}

}  // namespace

FlopCount count_flops(const FunctionNode& fn, bool compile_time_free, const SymbolValues& values) {
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
    add_count(out, it->second, call_flops(fn, b, call, values), fn, b, call);
  }
  return out;
}

std::set<std::string> function_symbols(const FunctionNode& fn) {
  std::set<std::string> out;
  for (const Var& p : fn.params()) add_type_symbols(*p->type(), false, out);
  for (const Binding& b : fn.bindings()) add_type_symbols(*b.var->type(), false, out);
  return out;
}

namespace {

std::string int128_to_string(__int128 signed_value) {
  // The magnitude as unsigned: -(-2**127) does not fit a signed __int128.
  unsigned __int128 v = signed_value < 0 ? -static_cast<unsigned __int128>(signed_value)
                                         : static_cast<unsigned __int128>(signed_value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return signed_value < 0 ? "-" + digits : digits;
}

}  // namespace

// Each term's coefficient times the values of its symbols given, in 128
// bits, summed per monomial left: terms past int64 may cancel (k*m**2 -
// k**2*m at m = 3e6, k = m - 1 is 9e12), so only the sums need fit int64.
Dim substitute_symbols(const Dim& d, const SymbolValues& values) {
  if (d.is_const() || values.empty()) return d;
  std::map<Monomial, __int128> sums;
  for (const DimTerm& term : d.terms()) {
    __int128 product = term.coeff;
    Monomial left;
    for (const auto& [symbol, exponent] : term.monomial) {
      auto it = values.find(symbol);
      if (it != values.end() && it->second == 0) product = 0;  // a zero factor: the term is 0, whatever the others
    }
    for (const auto& [symbol, exponent] : term.monomial) {
      auto it = values.find(symbol);
      if (it == values.end()) {
        left.emplace_back(symbol, exponent);
        continue;
      }
      for (int i = 0; i < exponent; ++i)
        if (__builtin_mul_overflow(product, static_cast<__int128>(it->second), &product))
          throw SizeOverflowError(str("a term of ", d.to_string(), " is past 128 bits"));
    }
    __int128& sum = sums[left];
    if (__builtin_add_overflow(sum, product, &sum))
      throw SizeOverflowError(str("a partial sum of ", d.to_string(), " is past 128 bits"));
  }
  Dim out(0);
  for (const auto& [monomial, sum] : sums) {
    if (sum < std::numeric_limits<int64_t>::min() || sum > std::numeric_limits<int64_t>::max())
      throw SizeOverflowError(str(monomial.empty() ? "it is " : "a coefficient is ", int128_to_string(sum)));
    Dim product(static_cast<int64_t>(sum));
    for (const auto& [symbol, exponent] : monomial) product = product * power(Dim::symbol(symbol), exponent);
    out = out + product;
  }
  return out;
}

}  // namespace aj
