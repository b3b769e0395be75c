// Conversions between Python objects and the core's value types (attrs,
// shapes, dtypes, NDArrays), shared by the binding files. Every failure is an
// aj::Error naming what could not be converted.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "adjoint/ir/attrs.h"
#include "adjoint/ir/function.h"
#include "adjoint/ir/ndarray.h"

namespace aj::bindings {

namespace py = pybind11;

AttrValue attr_from_py(const py::handle& obj, const std::string& what);
py::object attr_to_py(const AttrValue& v);

Shape shape_from_py(const py::handle& obj, const std::string& what);
py::tuple shape_to_py(const Shape& shape);
DType dtype_from_py(const py::handle& obj, const std::string& what);

// A C-contiguous copy of a NumPy array (or anything np.asarray accepts).
NDArray ndarray_from_py(const py::handle& obj, std::optional<DType> dtype, const std::string& what);
py::array ndarray_to_py(const NDArray& a);  // a copy

// The binding-side handles of immutable IR nodes (pybind holders are non-const).
template <typename T>
std::shared_ptr<T> unconst(const std::shared_ptr<const T>& p) {
  return std::const_pointer_cast<T>(p);
}

// A function together with the name it has in its module (for printing).
struct NamedFunction {
  std::string name;
  Function fn;
};

}  // namespace aj::bindings
