// Python <-> core value conversions (see convert.h).
#include "convert.h"

#include <pybind11/stl.h>

#include <array>
#include <cstdio>
#include <cstring>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/names.h"
#include "adjoint/support/error.h"

namespace aj::bindings {
namespace {

// A dim string read by Dim::parse; a bad one's error also names `what`.
Dim dim_from_str(const py::handle& s, const What& what) {
  std::string text = string_arg(s, what);
  try {
    return Dim::parse(text);
  } catch (const DimSyntaxError& e) {
    throw DimSyntaxError(str(what, ": ", e.what()), e.offset());
  }
}

// Dims from a tuple or list of ints, dim strings and aj.Dims; negative ints
// are an error unless `allow_negative` (attrs, whose op checks them).
Shape dims_from_py(const py::handle& obj, const What& what, bool allow_negative) {
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj))
    throw Error(str(what, ": a shape must be a tuple or list of ints, strings and aj.Dims, got ",
                    py_type_name(obj)));
  Shape out;
  for (const auto& d : obj) {
    if (py::isinstance<py::str>(d)) {
      out.push_back(dim_from_str(d, what));
    } else if (is_int_like(d)) {
      int64_t v = to_int64(d, what);
      if (v < 0 && !allow_negative) throw Error(str(what, ": negative dim ", v));
      out.push_back(Dim(v));
    } else if (py::isinstance<Dim>(d)) {
      Dim v = d.cast<Dim>();  // arithmetic may make a negative one (aj.Dim(1) - 3)
      if (v.is_const() && v.value() < 0 && !allow_negative) throw Error(str(what, ": negative dim ", v.value()));
      out.push_back(std::move(v));
    } else {
      throw Error(str(what, ": a dim must be an int, a string or an aj.Dim, got ", py_type_name(d)));
    }
  }
  return out;
}

}  // namespace

const py::object& numpy_attr(NumpyAttr which) {
  // Stored once under the GIL (a plain static could deadlock: another thread
  // may hold the GIL while it waits for the static's initialization).
  using Attrs = std::array<py::object, 4>;
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<Attrs> stored;
  const Attrs& attrs = stored
                           .call_once_and_store_result([] {
                             py::module_ np = py::module_::import("numpy");
                             return Attrs{np.attr("bool_"), np.attr("integer"), np.attr("floating"), np.attr("dtype")};
                           })
                           .get_stored();
  return attrs[static_cast<size_t>(which)];
}

bool is_int_like(const py::handle& o) {
  return !py::isinstance<py::bool_>(o) &&
         (py::isinstance<py::int_>(o) || py::isinstance(o, numpy_attr(NumpyAttr::kInteger)));
}

int64_t to_int64(const py::handle& o, const What& what) {
  try {
    return py::int_(py::reinterpret_borrow<py::object>(o)).cast<int64_t>();
  } catch (const py::error_already_set&) {
    throw Error(str(what, ": int ", py::str(o).cast<std::string>(), " does not fit in 64 bits"));
  } catch (const py::cast_error&) {
    throw Error(str(what, ": int ", py::str(o).cast<std::string>(), " does not fit in 64 bits"));
  }
}

std::string py_type_name(const py::handle& o) {
  return printable_str(py::str(py::type::of(o).attr("__name__")));
}

std::optional<std::string> utf8_of(const py::handle& s, Py_ssize_t* bad) {
  Py_ssize_t size = 0;
  if (const char* data = PyUnicode_AsUTF8AndSize(s.ptr(), &size)) return std::string(data, static_cast<size_t>(size));
  PyErr_Clear();
  if (bad) {
    *bad = -1;
    Py_ssize_t n = PyUnicode_GetLength(s.ptr());
    for (Py_ssize_t i = 0; i < n && *bad < 0; ++i) {
      Py_UCS4 c = PyUnicode_ReadChar(s.ptr(), i);
      if (c >= 0xD800 && c <= 0xDFFF) *bad = i;
    }
  }
  return std::nullopt;
}

std::string code_point_at(const py::handle& s, Py_ssize_t i) {
  Py_UCS4 c = i >= 0 && i < PyUnicode_GetLength(s.ptr()) ? PyUnicode_ReadChar(s.ptr(), i) : 0;
  char hex[16];
  std::snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(c));
  return hex;
}

std::string printable_str(const py::handle& s) {
  if (auto utf8 = utf8_of(s)) return *std::move(utf8);
  py::object bytes = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(s.ptr(), "utf-8", "backslashreplace"));
  if (!bytes) {
    PyErr_Clear();
    return "?";
  }
  return std::string(PyBytes_AS_STRING(bytes.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(bytes.ptr())));
}

Module verified_module(const py::handle& obj, const std::string& user) {
  Module mod = node_arg<ModuleNode>(obj, user, "an aj.Module");
  py::gil_scoped_release nogil;
  verify_input(mod, user);
  return mod;
}

void throw_function_not_found(const std::string& message) {
  py::object cls = py::module_::import("adjoint.errors").attr("FunctionNotFoundError");
  PyErr_SetObject(cls.ptr(), py::str(message).ptr());
  throw py::error_already_set();
}

std::string function_name_key(const py::handle& key, const std::string& container) {
  if (!py::isinstance<py::str>(key))
    throw_function_not_found(str(container, " has no function ", printable_str(py::repr(key)),
                                 ": function names are str, got ", py_type_name(key)));
  auto name = utf8_of(key);  // a name with a lone surrogate cannot be any function's
  if (!name) throw_function_not_found(str(container, " has no function '", printable_str(key), "'"));
  return *std::move(name);
}

std::string checked_function_name(std::string name, std::string_view owner) {
  if (std::string problem = function_name_problem(name); !problem.empty()) throw Error(str(owner, ": ", problem));
  return name;
}

DType dtype_from_py(const py::handle& obj, const What& what) {
  std::string name;
  if (py::isinstance<py::str>(obj)) {
    name = string_arg(obj, what);
  } else {
    try {
      name = py::str(numpy_attr(NumpyAttr::kDtype)(obj).attr("name")).cast<std::string>();
    } catch (const py::error_already_set&) {
      throw Error(str(what, ": not a dtype: ", printable_str(py::repr(obj))));
    }
  }
  auto t = dtype_from_name(name);
  if (!t)
    throw Error(str(what, ": unknown dtype '", name,
                    "' (expected float32, float64, int32, int64 or bool)"));
  return *t;
}

Shape shape_from_py(const py::handle& obj, const What& what) {
  return dims_from_py(obj, what, /*allow_negative=*/false);
}

Type tensor_type_from_py(const py::handle& shape, const py::handle& dtype, const What& what) {
  Shape dims = shape_from_py(shape, what);
  DType t = dtype_from_py(dtype, what);
  try {
    return TypeNode::tensor(std::move(dims), t);
  } catch (const SizeOverflowError& e) {
    throw TypeInferenceError(str(what, ": ", e.what()));
  }
}

py::tuple shape_to_py(const Shape& shape) {
  py::tuple t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].is_const()) t[i] = py::int_(shape[i].value());
    else t[i] = py::str(shape[i].to_string());
  }
  return t;
}

AttrValue attr_from_py(const py::handle& obj, const What& what) {
  if (obj.is_none()) return NoneValue{};
  if (py::isinstance<py::bool_>(obj) || py::isinstance(obj, numpy_attr(NumpyAttr::kBool))) return obj.cast<bool>();
  if (is_int_like(obj)) return to_int64(obj, what);
  if (py::isinstance<py::float_>(obj) ||
      py::isinstance(obj, numpy_attr(NumpyAttr::kFloating)))
    return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return string_arg(obj, what);
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    bool all_int = true;
    for (const auto& e : obj) all_int = all_int && is_int_like(e);
    if (all_int) {
      std::vector<int64_t> v;
      for (const auto& e : obj) v.push_back(to_int64(e, what));
      return v;
    }
    return dims_from_py(obj, what, /*allow_negative=*/true);
  }
  if (py::isinstance(obj, numpy_attr(NumpyAttr::kDtype)) || py::isinstance<py::type>(obj))
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

NDArray ndarray_from_py(const py::handle& obj, std::optional<DType> dtype, const What& what) {
  py::module_ np = py::module_::import("numpy");
  py::object value = py::reinterpret_borrow<py::object>(obj);
  if (dtype) {
    // Cast to the dtype asked for only when no number changes, as the
    // executor's arguments are (adjoint/_casts.py): 1.5 or NaN into an int,
    // 2**40 into int32 and 2 into bool are refused, not truncated.
    py::object cast = numpy_call<Error>([&] { return str(what, ": cannot make an array"); }, [&] {
      return py::module_::import("adjoint._casts").attr("param_array")(obj, dtype_name(*dtype));
    });
    if (py::isinstance<py::str>(cast)) throw Error(str(what, ": ", cast.cast<std::string>()));
    value = cast;
  }
  py::array a = numpy_call<Error>([&] { return str(what, ": cannot make an array"); }, [&] {
    // asarray(order="C"), not ascontiguousarray, which makes 0-d arrays 1-d.
    py::object arr = np.attr("asarray")(value, py::arg("order") = "C");
    py::object dt = arr.attr("dtype");
    if (!dt.attr("isnative").cast<bool>()) arr = arr.attr("astype")(dt.attr("newbyteorder")("="));
    return arr;
  }).cast<py::array>();
  DType t = dtype_from_py(a.dtype(), what);
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  NDArray out = NDArray::empty(shape, t);
  if (out.nbytes()) std::memcpy(out.data(), a.data(), out.nbytes());
  if (t == DType::kBool) make_canonical_bools(out.data(), out.numel());
  return out;
}

const py::dtype& numpy_dtype(DType t) {
  // Leaked on purpose: NumPy's builtin dtypes outlive the interpreter's
  // shutdown of this module, and a static py::object would be released
  // after Python is gone.
  static const auto* table = [] {
    auto* v = new std::vector<py::dtype>;
    for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool})
      v->push_back(py::dtype(dtype_name(d)));
    return v;
  }();
  return (*table)[static_cast<size_t>(t)];
}

py::array ndarray_to_py(const NDArray& a, bool writeable) {
  // NumPy refuses dims whose product passes its limit, even beside a 0 ((0, 2**61 + 1) int32); pybind11
  // multiplies them into C strides before NumPy sees them, so strides past int64 are refused here first.
  auto refused = [&](const std::string& why) {
    return SizeOverflowError(str("an array of shape ", shape_to_string(Shape(a.shape().begin(), a.shape().end())),
                                 " ", dtype_name(a.dtype()), ", which NumPy cannot make: ", why));
  };
  int64_t stride = static_cast<int64_t>(dtype_size(a.dtype()));
  for (size_t d = a.shape().size(); d-- > 1;)
    if (__builtin_mul_overflow(stride, a.shape()[d], &stride)) throw refused("its strides pass int64");
  auto* keep = new std::shared_ptr<void>(a.owner());
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  py::array out;
  try {
    out = py::array(numpy_dtype(a.dtype()), a.shape(), a.data(), base);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ValueError)) throw;
    throw refused(e.what());
  }
  if (!writeable) out.attr("flags").attr("writeable") = false;
  return out;
}

Expr expr_arg(const py::handle& e, const What& what) { return node_arg<ExprNode>(e, what, "an aj.Expr"); }

std::vector<Expr> exprs_in(const py::handle& list, const What& what) {
  auto nodes = node_list_arg<ExprNode>(list, what, "aj.Expr");
  return std::vector<Expr>(nodes.begin(), nodes.end());
}

py::dict dict_arg(const py::handle& obj, const What& what) {
  if (!py::isinstance<py::dict>(obj)) throw Error(str(what, ": expected a dict, got ", py_type_name(obj)));
  return py::reinterpret_borrow<py::dict>(obj);
}

AttrValue func_attr_in(const std::string& key, const py::handle& value, const std::string& what) {
  AttrValue v = attr_from_py(value, "function attr '" + key + "'");
  if (!is_known_func_attr(key)) throw VerifyError(str(what, ": ", func_attr_problem(key, v)));
  return v;  // its kind (and num_input's range) is the verifier's to judge
}

FuncAttrs func_attrs_in(const py::handle& attrs, const std::string& what) {
  FuncAttrs out;
  for (const auto& kv : dict_arg(attrs, what + ": attrs")) {
    std::string key = string_arg(kv.first, what + ": attr name");
    out.emplace_back(key, func_attr_in(key, kv.second, what));
  }
  return out;
}

std::vector<std::pair<std::string, AttrValue>> call_attrs_in(const OpDef& op, const py::handle& attrs) {
  What what("op '", op.name, "'");
  std::vector<std::pair<std::string, AttrValue>> out;
  for (const auto& kv : dict_arg(attrs, what.then(": attrs"))) {
    std::string key = string_arg(kv.first, what.then(": attr name"));
    out.emplace_back(key, attr_from_py(kv.second, what.then(": attr '", key, "'")));
  }
  return out;
}

namespace {
thread_local int callback_nesting = 0;
}  // namespace

CallbackNesting::CallbackNesting(const char* what) {
  if (callback_nesting >= kMaxCallbackNesting)
    throw Error(str(what, ": Python callbacks nest more than ", kMaxCallbackNesting,
                    " deep (a callback running a pass that calls it again, and so on)"));
  ++callback_nesting;
}

CallbackNesting::~CallbackNesting() { --callback_nesting; }

}  // namespace aj::bindings
