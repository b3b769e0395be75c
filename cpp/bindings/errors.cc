// Translates the core's C++ exceptions into adjoint's Python exception
// classes (adjoint/errors.py), carrying line/column when known. Any other
// C++ exception becomes aj.Error rather than crashing the interpreter.
#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>
#include <variant>

#include "adjoint/support/error.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

void raise_as(const char* class_name, const char* message, const SourceLoc& loc) {
  py::gil_scoped_acquire gil;
  py::object errors = py::module_::import("adjoint.errors");
  py::object cls = errors.attr(class_name);
  py::object exc = cls(message);
  if (loc.line > 0) {
    exc.attr("line") = loc.line;
    exc.attr("column") = loc.column;
    exc.attr("source_line") = loc.source_line;
  }
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const aj::Error& e) {
      raise_as(e.kind(), e.what(), e.loc());
    } catch (const std::bad_alloc&) {
      raise_as("OutOfMemoryError", "out of memory: an allocation of adjoint's core failed", {});
    } catch (const std::bad_variant_access& e) {
      raise_as("Error", (std::string("internal attr kind mismatch: ") + e.what()).c_str(), {});
    } catch (const std::out_of_range& e) {
      raise_as("Error", e.what(), {});
    } catch (const std::length_error& e) {
      raise_as("Error", e.what(), {});
    }
  });
}

}  // namespace aj::bindings
