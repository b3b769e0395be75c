// Structural equality and hashing of IR, up to alpha-equivalence: var names
// do not matter (vars are matched by where they are defined), binding order,
// ops, attrs, types and constants do. structural_hash is consistent with
// structural_equal.
#pragma once

#include <optional>
#include <string>

#include "adjoint/ir/function.h"

namespace aj {

bool structural_equal(const Module& a, const Module& b);
bool structural_equal(const Function& a, const Function& b);
size_t structural_hash(const Module& m);
size_t structural_hash(const Function& f);

// nullopt when equal; otherwise a message naming the first difference: where
// it is (function, binding index and var) and both sides printed.
std::optional<std::string> structural_diff(const Module& a, const Module& b);
std::optional<std::string> structural_diff(const Function& a, const Function& b);

}  // namespace aj
