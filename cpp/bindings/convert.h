// Conversions between Python objects and the core's value types (attrs,
// shapes, dtypes, NDArrays), shared by the binding files. Every failure is an
// aj::Error naming what could not be converted.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "adjoint/ir/attrs.h"
#include "adjoint/ir/function.h"
#include "adjoint/ir/ndarray.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj::bindings {

namespace py = pybind11;

// What an argument is, for the message of an error about it ("op 'split':
// attr 'axis'"): a parent's name followed by up to three parts, joined only
// when a message is written, so that a conversion that succeeds, as nearly
// all do, builds no string. The parts are views: a What lives no longer than
// the call it is given to.
class What {
 public:
  What(const std::string& s) : a_(s) {}  // NOLINT(google-explicit-constructor): stands for the string
  What(const char* s) : a_(s) {}          // NOLINT(google-explicit-constructor)
  What(std::string_view a, std::string_view b, std::string_view c = {}) : a_(a), b_(b), c_(c) {}
  // This name followed by more: what.then(": attr '", key, "'").
  What then(std::string_view a, std::string_view b = {}, std::string_view c = {}) const { return What(this, a, b, c); }

  friend std::ostream& operator<<(std::ostream& os, const What& w) {
    if (w.parent_) os << *w.parent_;
    return os << w.a_ << w.b_ << w.c_;
  }

 private:
  What(const What* parent, std::string_view a, std::string_view b, std::string_view c)
      : parent_(parent), a_(a), b_(b), c_(c) {}

  const What* parent_ = nullptr;
  std::string_view a_, b_, c_;
};

// Typed reads of arguments given from Python. A value of the wrong kind is
// an aj::Error naming `what` and what was given, never a pybind TypeError.
std::string py_type_name(const py::handle& obj);
bool is_int_like(const py::handle& obj);  // int or NumPy integer, not bool
int64_t to_int64(const py::handle& obj, const What& what);

// NumPy's scalar and dtype classes, looked up once (conversions test against
// them on every call).
enum class NumpyAttr { kBool, kInteger, kFloating, kDtype };
const py::object& numpy_attr(NumpyAttr which);

// The UTF-8 form of a Python str, or nothing when it holds a lone surrogate
// (U+D800..U+DFFF alone has no UTF-8 form); *bad then gets its index.
std::optional<std::string> utf8_of(const py::handle& s, Py_ssize_t* bad = nullptr);
// "U+D800": the code point at index i of a str, for messages.
std::string code_point_at(const py::handle& s, Py_ssize_t i);
// A str for a message, whatever it holds: lone surrogates written \udxxx.
std::string printable_str(const py::handle& s);

template <class E = Error>
std::string string_arg(const py::handle& obj, const What& what) {
  if (!py::isinstance<py::str>(obj))
    throw E(str(what, ": expected a str, got ", obj.is_none() ? "None" : py_type_name(obj)));
  Py_ssize_t bad = -1;
  if (auto s = utf8_of(obj, &bad)) return *std::move(s);
  throw E(str(what, ": the str holds a lone surrogate ", code_point_at(obj, bad), " at index ", bad, " (no UTF-8 form)"));
}

template <class E = Error>
int64_t int_arg(const py::handle& obj, const What& what) {
  if (!is_int_like(obj)) throw E(str(what, ": expected an int, got ", obj.is_none() ? "None" : py_type_name(obj)));
  try {
    return to_int64(obj, what);
  } catch (const Error& e) {
    throw E(e.what());
  }
}

template <class E = Error>
bool bool_arg(const py::handle& obj, const What& what) {
  if (!py::isinstance<py::bool_>(obj) && !py::isinstance(obj, numpy_attr(NumpyAttr::kBool)))
    throw E(str(what, ": expected a bool, got ", obj.is_none() ? "None" : py_type_name(obj)));
  return obj.cast<bool>();
}

// The IR node of class T that obj wraps, or nullptr when it wraps none (or
// is None): one lookup of T's registration, where isinstance then cast
// would make two.
template <typename T>
std::shared_ptr<T> node_or_null(const py::handle& obj) {
  py::detail::make_caster<std::shared_ptr<T>> caster;
  if (obj.is_none() || !caster.load(obj, /*convert=*/false)) return nullptr;
  return py::detail::cast_op<std::shared_ptr<T>>(std::move(caster));
}

// An IR node of class T (`expected` names it for the message); None is an error.
template <typename T>
std::shared_ptr<T> node_arg(const py::handle& obj, const What& what, const char* expected) {
  if (std::shared_ptr<T> node = node_or_null<T>(obj)) return node;
  throw Error(str(what, ": expected ", expected, ", got ", obj.is_none() ? "None" : py_type_name(obj)));
}

// A list or tuple of IR nodes of class T; item i is named "what[i]".
template <typename T>
std::vector<std::shared_ptr<T>> node_list_arg(const py::handle& obj, const What& what, const char* expected) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj))
    throw Error(str(what, ": expected a list of ", expected, ", got ", py_type_name(obj)));
  std::vector<std::shared_ptr<T>> out;
  out.reserve(py::len(obj));
  for (const auto& item : obj) {
    std::shared_ptr<T> node = node_or_null<T>(item);
    if (!node) node_arg<T>(item, str(what, "[", out.size(), "]"), expected);  // the item's name is made only for the message
    out.push_back(std::move(node));
  }
  return out;
}

// Runs f, which calls NumPy; a Python exception from it becomes an aj error
// that starts with what(): OutOfMemoryError for a MemoryError, else E.
template <class E, typename F, typename What>
py::object numpy_call(What what, F&& f) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_MemoryError)) throw OutOfMemoryError(str(what(), ": out of memory"));
    throw E(str(what(), ": ", e.what()));
  }
}

// The module given to `user` (a pass, build), verified with the GIL
// released; VerifyError names the function and var of the first problem.
Module verified_module(const py::handle& obj, const std::string& user);

// A function name given as a key (mod["f"], exe["f"]); a non-str key is a
// FunctionNotFoundError as a missing name is.
std::string function_name_key(const py::handle& key, const std::string& container);
[[noreturn]] void throw_function_not_found(const std::string& message);
// A function name given to `owner` (a module, a builder, a function), when
// the text format reads it as a name (ir/names.h); else an aj::Error naming
// the owner, the name, what is wrong with it and the rule.
std::string checked_function_name(std::string name, std::string_view owner);

// Exprs and dicts given as arguments; the wrong kind is an aj::Error naming `what`.
Expr expr_arg(const py::handle& e, const What& what);
std::vector<Expr> exprs_in(const py::handle& list, const What& what);
py::dict dict_arg(const py::handle& obj, const What& what);
// Function attrs from a dict; a name that is not a known function attr is a
// VerifyError naming the known ones (values are judged by the verifier).
FuncAttrs func_attrs_in(const py::handle& attrs, const std::string& what);
AttrValue func_attr_in(const std::string& key, const py::handle& value, const std::string& what);
// A call's attrs by name, from a dict.
std::vector<std::pair<std::string, AttrValue>> call_attrs_in(const OpDef& op, const py::handle& attrs);

// Attr values from Python; a shape-like list keeps negative dims (a reshape's
// -1) for the op's attr check to judge, as the parser does.
AttrValue attr_from_py(const py::handle& obj, const What& what);
py::object attr_to_py(const AttrValue& v);

Shape shape_from_py(const py::handle& obj, const What& what);
py::tuple shape_to_py(const Shape& shape);
DType dtype_from_py(const py::handle& obj, const What& what);
// Tensor((shape), dtype); a shape too large is a TypeInferenceError naming `what`.
Type tensor_type_from_py(const py::handle& shape, const py::handle& dtype, const What& what);

// A C-contiguous, native-endian copy of a NumPy array (or anything
// np.asarray accepts), converted to `dtype` when given; bools as 0 and 1.
NDArray ndarray_from_py(const py::handle& obj, std::optional<DType> dtype, const What& what);
// NumPy's dtype object for t (native byte order), made once per dtype.
const py::dtype& numpy_dtype(DType t);
// A NumPy view of an array that keeps its buffer alive (no copy); read-only
// unless `writeable` (a constant's value is immutable; a result is the caller's).
py::array ndarray_to_py(const NDArray& a, bool writeable = false);

// The binding-side handles of immutable IR nodes (pybind holders are non-const).
template <typename T>
std::shared_ptr<T> unconst(const std::shared_ptr<const T>& p) {
  return std::const_pointer_cast<T>(p);
}

// Held while a Python callback (a rewriter, CombineParallelMatmul's check)
// runs: a callback that runs a pass calling it again nests C++ frames as well
// as Python ones, and Python's recursion limit counts only the latter. More
// than kMaxCallbackNesting callbacks, one inside another, on one thread is an
// aj::Error naming `what`, not a C++ stack overflow.
class CallbackNesting {
 public:
  static constexpr int kMaxCallbackNesting = 100;
  explicit CallbackNesting(const char* what);
  ~CallbackNesting();
  CallbackNesting(const CallbackNesting&) = delete;
  CallbackNesting& operator=(const CallbackNesting&) = delete;
};

// A function together with the name it has in its module (for printing).
struct NamedFunction {
  std::string name;
  Function fn;
};

}  // namespace aj::bindings
