// Conversions of literal syntax to IR values, shared by both parsing phases:
// attr values, symbolic dims, shapes, types and constant tensors. Each throws
// a located ParseError on bad input. Internal to cpp/src/ir.
#pragma once

#include <vector>

#include "syntax.h"

namespace aj::text {

// A literal node (int, float, inf/nan, string, bool, None, list or tuple of
// ints and dim strings) as an attr value: lists of ints -> int lists,
// tuples -> shapes.
AttrValue attr_value(const Source& src, const Node& n);

// A dim string ("n", "2*n + m", "n**2 - 1"): the grammar of Dim::parse, read
// with checked arithmetic, so that limits on nesting, terms, degree and
// coefficients keep pathological strings ("(a+b)**16", huge products) from
// exhausting the stack, time or memory, or overflowing. `off` locates errors.
Dim parse_dim(const Source& src, std::string_view text, size_t off);

// Tensor(shape, dtype) or Tuple(...) from its call node.
Type type_from_node(const Source& src, const Node& n);

DType dtype_from_node(const Source& src, const Node& n);

// Builds the constant of the given shape (row-major leaves) and dtype,
// converting each leaf; out-of-range or non-integral values are errors.
Expr make_constant(const Source& src, const std::vector<int64_t>& shape,
                   const std::vector<ConstLeaf>& leaves, DType dtype);

}  // namespace aj::text
