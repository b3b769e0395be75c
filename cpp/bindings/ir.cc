// Bindings of the IR (placeholder until the full IR bindings land in this file).
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace aj::bindings {
void bind_ir(py::module_& m) {}
}  // namespace aj::bindings
