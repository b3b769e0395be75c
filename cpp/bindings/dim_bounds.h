// Reading dim bounds given from Python ({"r": (1, 64), "n": (1024, None)})
// into a DimBounds, for every binding that takes a dim_bounds argument.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "adjoint/analysis/dim_bounds.h"

namespace aj::bindings {

// None is no bounds. Anything but a dict of symbol -> (low, high or None) with
// int bounds is a TransformError naming `where` and the symbol.
DimBounds dim_bounds_arg(const pybind11::handle& obj, const std::string& where);

}  // namespace aj::bindings
