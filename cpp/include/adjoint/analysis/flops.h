// FLOP estimates of a function: the sum over its call bindings of each op's
// FLOP rule (OpDef::flops: matmul (a, b) x (b, c) is 2abc, batch included;
// elementwise ops one per output element; reductions one per input element;
// data movement and creation none), as a Dim (a polynomial when shapes are
// symbolic). Tuples, tuple items, aliases and constants cost nothing. One
// walk over the bindings.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/dim.h"
#include "adjoint/ir/function.h"

namespace aj {

struct FlopCount {
  Dim total;
  std::vector<std::pair<std::string, Dim>> by_op;  // each op called, in order of its first call
};

// {symbol: value} for the symbols of a function's shapes.
using SymbolValues = std::map<std::string, int64_t>;

// With compile_time_free, the bindings computable at compile time (see
// analysis/compile_time.h) cost nothing (their ops are still listed).
// `values` are put into each call's count before the sums, so a count whose
// symbols are all given is a number even where the polynomial over them is
// past Dim's limits (more terms than kMaxTerms over many calls, or a degree
// above kMaxDegree in one). Throws TypeInferenceError naming the binding
// when a count is such a polynomial still, SizeOverflowError when it
// overflows int64.
FlopCount count_flops(const FunctionNode& fn, bool compile_time_free, const SymbolValues& values = {});

// Every symbol of the function's param and binding types.
std::set<std::string> function_symbols(const FunctionNode& fn);

// d with the given symbols replaced by their values; symbols not given stay.
// Throws SizeOverflowError when the result overflows int64.
Dim substitute_symbols(const Dim& d, const SymbolValues& values);

}  // namespace aj
