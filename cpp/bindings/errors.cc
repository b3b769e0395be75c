// Translates the core's C++ exceptions into adjoint's Python exception
// classes (adjoint/errors.py), carrying line/column when known. Any other
// C++ exception becomes aj.Error rather than crashing the interpreter. Also
// the core's interrupt check (support/interrupt.h): Python's pending
// signals, so Ctrl-C stops a long search with KeyboardInterrupt.
#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>
#include <variant>

#include "adjoint/support/error.h"
#include "adjoint/support/interrupt.h"

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

// Runs Python's handlers of the signals that arrived (on the main thread
// only; elsewhere nothing is pending); the exception one raises ends the
// work it interrupts.
void check_python_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

}  // namespace

void bind_errors(py::module_& m) {
  set_interrupt_check(&check_python_signals);
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
