// The adjoint._core extension: one PYBIND11_MODULE that calls each area's
// binding function (one file per area).
#include <pybind11/pybind11.h>

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
}
