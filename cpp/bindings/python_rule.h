// Rules whose replacement is a Python callable, replacement(root, captures)
// -> expr or None, read from (name, before_after, pattern, replacement)
// tuples. Defined with the pattern bindings (pattern.cc); the rewriter
// bindings (pattern_rewriter.cc) mix them with rules made in C++.
#pragma once

#include <pybind11/pybind11.h>

#include "adjoint/pattern/rule.h"

namespace aj::bindings {

// Item i of a list of rules; an aj::Error naming it when it is malformed.
Rule python_rule(const pybind11::handle& obj, size_t i);

}  // namespace aj::bindings
