// Attribute values of calls and functions. An op's attrs are stored
// positionally, in the order of that op's schema (op/registry.h), with
// defaults filled in; a function's attrs are a small ordered name -> value map.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "adjoint/ir/dim.h"
#include "adjoint/ir/dtype.h"

namespace aj {

struct NoneValue {
  bool operator==(const NoneValue&) const { return true; }
};

using AttrValue = std::variant<NoneValue, bool, int64_t, double, std::string,
                               std::vector<int64_t>, Shape, DType>;

std::string attr_to_string(const AttrValue& v);  // text-format literal
std::string string_literal(const std::string& s);  // "...", escaped as the parser reads it
bool attr_equal(const AttrValue& a, const AttrValue& b);
size_t attr_hash(const AttrValue& v);

using Attrs = std::vector<AttrValue>;

// Function attributes (num_input, ...); a FunctionNode keeps them in
// canonical order (ir/function.h).
using FuncAttrs = std::vector<std::pair<std::string, AttrValue>>;

}  // namespace aj
