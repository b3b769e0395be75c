// Python <-> core value conversions (see convert.h).
#include "convert.h"

#include <pybind11/stl.h>

#include <cstring>

#include "adjoint/support/error.h"

namespace aj::bindings {
namespace {

bool is_int_like(const py::handle& o) {
  return !py::isinstance<py::bool_>(o) && (py::isinstance<py::int_>(o) ||
         py::isinstance(o, py::module_::import("numpy").attr("integer")));
}

std::string py_type_name(const py::handle& o) {
  return py::str(py::type::of(o).attr("__name__")).cast<std::string>();
}

int64_t to_int64(const py::handle& o, const std::string& what) {
  try {
    return py::int_(py::reinterpret_borrow<py::object>(o)).cast<int64_t>();
  } catch (const py::error_already_set&) {
    throw Error(str(what, ": int ", py::str(o).cast<std::string>(), " does not fit in 64 bits"));
  } catch (const py::cast_error&) {
    throw Error(str(what, ": int ", py::str(o).cast<std::string>(), " does not fit in 64 bits"));
  }
}

}  // namespace

DType dtype_from_py(const py::handle& obj, const std::string& what) {
  std::string name;
  if (py::isinstance<py::str>(obj)) {
    name = obj.cast<std::string>();
  } else {
    try {
      name = py::str(py::module_::import("numpy").attr("dtype")(obj).attr("name")).cast<std::string>();
    } catch (const py::error_already_set&) {
      throw Error(str(what, ": not a dtype: ", py::repr(obj).cast<std::string>()));
    }
  }
  auto t = dtype_from_name(name);
  if (!t)
    throw Error(str(what, ": unknown dtype '", name,
                    "' (expected float32, float64, int32, int64 or bool)"));
  return *t;
}

Shape shape_from_py(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj))
    throw Error(str(what, ": a shape must be a tuple or list of ints and strings, got ",
                    py_type_name(obj)));
  Shape out;
  for (const auto& d : obj) {
    if (py::isinstance<py::str>(d)) {
      out.push_back(Dim::parse(d.cast<std::string>()));
    } else if (is_int_like(d)) {
      int64_t v = to_int64(d, what);
      if (v < 0) throw Error(str(what, ": negative dim ", v));
      out.push_back(Dim(v));
    } else {
      throw Error(str(what, ": a dim must be an int or a string, got ", py_type_name(d)));
    }
  }
  return out;
}

py::tuple shape_to_py(const Shape& shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].is_const()) t[i] = py::int_(shape[i].value());
    else t[i] = py::str(shape[i].to_string());
  }
  return t;
}

AttrValue attr_from_py(const py::handle& obj, const std::string& what) {
  if (obj.is_none()) return NoneValue{};
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (is_int_like(obj)) return to_int64(obj, what);
  if (py::isinstance<py::float_>(obj) ||
      py::isinstance(obj, py::module_::import("numpy").attr("floating")))
    return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    bool all_int = true;
    for (const auto& e : obj) all_int = all_int && is_int_like(e);
    if (all_int) {
      std::vector<int64_t> v;
      for (const auto& e : obj) v.push_back(to_int64(e, what));
      return v;
    }
    return shape_from_py(obj, what);
  }
  if (py::isinstance(obj, py::module_::import("numpy").attr("dtype")) || py::isinstance<py::type>(obj))
    return dtype_from_py(obj, what);
  throw Error(str(what, ": cannot use a value of type ", py_type_name(obj), " as an attr"));
}

py::object attr_to_py(const AttrValue& v) {
  if (std::holds_alternative<NoneValue>(v)) return py::none();
  if (auto* b = std::get_if<bool>(&v)) return py::bool_(*b);
  if (auto* i = std::get_if<int64_t>(&v)) return py::int_(*i);
  if (auto* d = std::get_if<double>(&v)) return py::float_(*d);
  if (auto* s = std::get_if<std::string>(&v)) return py::str(*s);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v)) return py::cast(*l);
  if (auto* s = std::get_if<Shape>(&v)) return shape_to_py(*s);
  return py::str(dtype_name(std::get<DType>(v)));
}

NDArray ndarray_from_py(const py::handle& obj, std::optional<DType> dtype, const std::string& what) {
  py::module_ np = py::module_::import("numpy");
  py::object arr;
  try {
    // asarray(order="C"), not ascontiguousarray, which makes 0-d arrays 1-d.
    arr = dtype ? np.attr("asarray")(obj, py::str(dtype_name(*dtype)), py::arg("order") = "C")
                : np.attr("asarray")(obj, py::arg("order") = "C");
  } catch (const py::error_already_set& e) {
    throw Error(str(what, ": cannot make an array: ", e.what()));
  }
  py::array a = arr.cast<py::array>();
  DType t = dtype_from_py(a.dtype(), what);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  NDArray out(shape, t);
  if (out.nbytes()) std::memcpy(out.data(), a.data(), out.nbytes());
  return out;
}

py::array ndarray_to_py(const NDArray& a) {
  py::dtype dt(std::string(dtype_name(a.dtype())) == "bool" ? "bool" : dtype_name(a.dtype()));
  py::array out(dt, a.shape());
  if (a.nbytes()) std::memcpy(out.mutable_data(), a.data(), a.nbytes());
  return out;
}

}  // namespace aj::bindings
