// Conversions of literal syntax to IR values, shared by both parsing phases:
// attr values, symbolic dims, shapes, types and constant tensors. Each throws
// a located ParseError on bad input. Internal to cpp/src/ir.
#pragma once

#include <vector>

#include "syntax.h"

namespace aj::text {

// The magnitude of an int token's text: decimal or 0x-prefixed hex, all of
// it; false when it does not fit in 64 bits.
bool parse_u64(std::string_view digits, uint64_t& out);

// A literal node (int, float, inf/nan, string, bool, None, list or tuple of
// ints and dim strings) as an attr value: lists of ints -> int lists,
// tuples -> shapes.
AttrValue attr_value(const Source& src, const Node& n);

// A dim string ("n", "2*n + m", "-n**2 + 2*n") read by Dim::parse, the one
// grammar of dims (dim_parse.cc). `off` is the string literal's offset; a
// bad dim is a ParseError pointing at the offending byte inside the literal
// (at its opening quote when the literal is written with escapes).
Dim parse_dim(const Source& src, std::string_view text, size_t off);

// Tensor(shape, dtype) or Tuple(...) from its call node.
Type type_from_node(const Source& src, const Node& n);

DType dtype_from_node(const Source& src, const Node& n);

// Builds the constant of the given shape (row-major leaves) and dtype,
// converting each leaf; out-of-range or non-integral values are errors.
Expr make_constant(const Source& src, const std::vector<int64_t>& shape,
                   const std::vector<ConstLeaf>& leaves, DType dtype);

}  // namespace aj::text
