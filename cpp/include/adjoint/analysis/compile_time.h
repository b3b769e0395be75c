// What of a function can be computed at compile time: the weights (params at
// index >= num_input) and every binding whose value uses only weights,
// constants and other compile-time bindings, and whose shape the weights fix
// (each symbol of its type is one a weight binds alone: a dim of the inputs
// is not known at compile time). A binding that uses no var at all
// (zeros((16,), "int32"), a constant) is compile-time but "constant-only".
// An item of a tuple literal counts as the field it reads.
// The weight-dependent bindings are the compile-time ones that use a weight,
// directly or through earlier bindings, or whose type has a symbol that no
// input binds alone (zeros(("n",)) with n a dim of a weight only: its shape
// comes from the weights): what LiftTransformParams moves out. Each is one
// forward walk over the bindings, linear in the function's size.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/function.h"

namespace aj {

// Per binding of the function `index` describes: 1 when its value uses only
// weights, constants and computable bindings, and its shape's symbols are
// ones the weights bind. An item of a tuple literal is what its field uses:
// with t = (x, w), t[1] is computable though t, holding input x, is not.
std::vector<uint8_t> computable_bindings(const DataflowIndex& index);
// The field a tuple item reads, found through the vars bound here to tuple
// literals, to items of them and to other vars (t = (x, w); a = t[1] reads
// w); nullptr when a tuple on the way is not a literal bound here or the
// path is longer than a few dozen steps.
const Expr* tuple_item_source(const DataflowIndex& index, const TupleGetItemNode& item);
// Whether every symbol of t's shapes is in `symbols`.
bool symbols_within(const TypeNode& t, const std::set<std::string>& symbols);
// The symbols the weights (the params from num_input on) bind alone: a
// compile-time value's shape may use only these.
std::set<std::string> weight_symbols(const FunctionNode& fn);
// Adds to `out` the symbols of t's tensor shapes; with bare_only, only those
// that are a dim by themselves (the ones this analysis takes a weight to fix).
void add_type_symbols(const TypeNode& t, bool bare_only, std::set<std::string>& out);
// Adds to `out` the symbols the executor binds from a param of type t
// whatever the other params: those of a dim k or a*k + b with a > 0
// (as_linear_dim in ir/dim.h) or of a dim in one symbol growing with it
// (k**2 + k; growing_symbol).
void add_param_bound_symbols(const TypeNode& t, std::set<std::string>& out);

// Per binding: 1 when it is computable (`computable`, from
// computable_bindings) and depends on at least one weight, or on a symbol
// only weights bind (see the top of this file).
std::vector<uint8_t> weight_dependent_bindings(const DataflowIndex& index, const std::vector<uint8_t>& computable);

}  // namespace aj
