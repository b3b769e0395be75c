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

// With compile_time_free, the bindings computable at compile time (see
// analysis/compile_time.h) cost nothing (their ops are still listed).
FlopCount count_flops(const FunctionNode& fn, bool compile_time_free);

// Every symbol of the function's param and binding types.
std::set<std::string> function_symbols(const FunctionNode& fn);

// d with the given symbols replaced by their values; symbols not given stay.
Dim substitute_symbols(const Dim& d, const std::map<std::string, int64_t>& values);

}  // namespace aj
