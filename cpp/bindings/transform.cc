// Bindings of the passes: each takes a module and returns a new one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/autodiff/gradient.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/passes.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

using PyModule = std::shared_ptr<ModuleNode>;

Module module_in(const PyModule& m, const char* pass) {
  if (!m) throw TransformError(str(pass, ": expected an aj.Module, got None"));
  return m;
}

}  // namespace

void bind_transform(py::module_& m) {
  m.def("gradient", [](const PyModule& mod, const std::string& func_name,
                       const std::optional<std::vector<std::string>>& require_grads, int target_index,
                       bool simplify) {
    GradientOptions opt{func_name, require_grads, target_index, simplify};
    Module in = module_in(mod, "Gradient");
    Module out;
    {
      py::gil_scoped_release nogil;
      out = gradient(in, opt);
    }
    return unconst(out);
  }, py::arg("mod"), py::arg("func_name"), py::arg("require_grads"), py::arg("target_index"), py::arg("simplify"));
  m.def("dead_code_elimination", [](const PyModule& mod) {
    return unconst(dead_code_elimination(module_in(mod, "DeadCodeElimination")));
  }, py::arg("mod"));
  m.def("eliminate_common_subexpr", [](const PyModule& mod) {
    return unconst(eliminate_common_subexpr(module_in(mod, "EliminateCommonSubexpr")));
  }, py::arg("mod"));
  m.def("simplify_gradient", [](const PyModule& mod) {
    return unconst(simplify_gradient(module_in(mod, "SimplifyGradient")));
  }, py::arg("mod"));
}

}  // namespace aj::bindings
