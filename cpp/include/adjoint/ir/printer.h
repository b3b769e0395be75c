// The printer of the text format (DESIGN.md §3). Its output is canonical:
// parse(print(m)) is structurally equal to m, and print(parse(t)) == t for
// every printed t. The canonical form:
//
//   @function                       (or @function(num_input=1, doc="..."): attrs in
//                                   canonical order, num_input then doc; ir/function.h)
//   def main(x: Tensor((3, 3), "float32"), n: Tensor(("n", 4), "int64")) -> Tensor((), "float32"):
//       lv1: Tensor((3, 3), "float32") = permute_dims(x)
//       lv2: Tensor((3, 1), "float32") = sum(lv1, axis=[1], keepdims=True)
//       t: Tuple(Tensor((3, 1), "float32"), Tensor((3, 1), "float32")) = (lv2, lv2)
//       q: Tensor((3, 1), "float32") = t[0]
//       c: Tensor((), "float32") = const(1.0, "float32")
//       return (q, c)
//
// - Functions are separated by one blank line; the text ends with "\n".
// - Four spaces of indentation; every binding carries its type annotation.
// - Shapes print as Python tuples: (), (3,), (3, 4); symbolic dims as strings
//   in canonical polynomial form ("2*n + m" prints as "m + 2*n").
// - Call attrs: those without default (required) print positionally after the
//   args, in schema order (reshape(x, (2, 3)), zeros((16,), "int32")); those
//   with a default print as keywords, in schema order, only when they differ
//   from the default.
// - Attr literals: ints; floats in shortest round-trip form, always with a '.'
//   or an exponent (1.0, 1e-05); True/False/None; "strings"; lists [1, 0];
//   shapes as tuples; dtypes as strings.
// - Constants: const(<value>, "<dtype>"), the value a nested list for rank >= 1;
//   float32 values in shortest float32 round-trip form.
// - Var names: a var's name hint, made unique within the function by appending
//   _1, _2, ... when several vars share a hint.
// - A returned expr or a binding value may be a tuple (a, (b, c)); a 1-tuple
//   prints as (a,).
#pragma once

#include <string>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

std::string print_module(const Module& mod);
std::string print_function(const std::string& name, const Function& fn);
std::string print_type(const Type& type);  // Tensor((3,), "float32")

// Single lines of print_function's output, unindented, with the var names
// print_function gives; for messages (structural_diff, verifier).
std::string print_decorator(const Function& fn);                        // @function(num_input=1)
std::string print_signature(const std::string& name, const Function& fn);  // def main(x: ...) -> T:
std::string print_binding(const Function& fn, size_t index);            // lv: T = op(x)
std::string print_return(const Function& fn);                           // return lv
// The names print_function gives fn's params, in order (each hint made an
// identifier and unique, as "Var names" above says).
std::vector<std::string> printed_param_names(const FunctionNode& fn);

// Shortest round-trip text of a float, with a '.' or exponent ("1.0", "1e-05", "inf", "nan").
std::string format_double(double v);
std::string format_float32(float v);

}  // namespace aj
