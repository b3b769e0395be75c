// The adjoint._core extension: one PYBIND11_MODULE that calls each area's
// binding function (one file per area), then closes every class's bare
// __new__ (refuse_bare_new).
#include <pybind11/pybind11.h>

#include "adjoint/support/error.h"

namespace py = pybind11;

namespace aj::bindings {
void bind_analysis_compile(py::module_& m);
void bind_builder(py::module_& m);
void bind_dim_bounds(py::module_& m);
void bind_errors(py::module_& m);
void bind_ir(py::module_& m);
void bind_pattern(py::module_& m);
void bind_pattern_rewriter(py::module_& m);
void bind_runtime(py::module_& m);
void bind_transform(py::module_& m);

namespace {

// pybind11's tp_new, which every class inherits from pybind11_object: it
// allocates a wrapper holding no C++ object yet (__init__ makes one).
newfunc pybind_new = nullptr;

PyObject* new_then_init(PyTypeObject* type, PyObject* args, PyObject* kwds) { return pybind_new(type, args, kwds); }

// A wrapper made by cls.__new__(cls) and never initialized holds no C++
// object, and pybind11 hands the first method called on it a null
// reference: a crash. So each class's __new__ is one that refuses with an
// aj.Error, and its tp_new slot, which the type's call (cls(...)) uses
// before __init__, is pybind11's under another address, so that CPython
// refuses pybind11_object.__new__(cls) and object.__new__(cls) as unsafe.
void refuse_bare_new(py::handle cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (type->tp_new != pybind_new) return;
  type->tp_new = new_then_init;
  std::string name = py::str(cls.attr("__name__"));
  py::cpp_function refuse([name](const py::args&, const py::kwargs&) -> py::object {
    throw Error(name + ".__new__: a " + name + " is made by calling " + name +
                "(...) or by adjoint's functions, not by __new__ alone");
  }, py::name("__new__"));
  PyDict_SetItemString(type->tp_dict, "__new__", py::staticmethod(refuse).ptr());
  PyType_Modified(type);
}

}  // namespace

// refuse_bare_new on every pybind11 class of m and of its submodules.
void refuse_bare_new_in(const py::module_& m) {
  pybind_new = reinterpret_cast<PyTypeObject*>(py::detail::get_internals().instance_base)->tp_new;
  std::string prefix = py::str(m.attr("__name__"));
  for (const auto& item : m.attr("__dict__").cast<py::dict>()) {
    py::handle value = item.second;
    if (PyModule_Check(value.ptr()) && py::str(value.attr("__name__")).cast<std::string>().rfind(prefix + ".", 0) == 0)
      refuse_bare_new_in(py::reinterpret_borrow<py::module_>(value));
    else if (PyType_Check(value.ptr()) && py::detail::get_type_info(reinterpret_cast<PyTypeObject*>(value.ptr())))
      refuse_bare_new(value);
  }
}

}  // namespace aj::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "adjoint's C++ core: IR, text format, passes and the CPU executor.";
  aj::bindings::bind_errors(m);
  aj::bindings::bind_ir(m);
  aj::bindings::bind_builder(m);
  aj::bindings::bind_analysis_compile(m);
  aj::bindings::bind_runtime(m);
  aj::bindings::bind_transform(m);
  aj::bindings::bind_pattern(m);
  aj::bindings::bind_pattern_rewriter(m);
  aj::bindings::bind_dim_bounds(m);
  aj::bindings::refuse_bare_new_in(m);
}
