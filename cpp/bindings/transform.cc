// Bindings of the passes: each takes a module, verifies it (malformed IR is
// an aj.VerifyError, never undefined behaviour) and returns a new module,
// with the GIL released while the pass runs (but while a Python callback
// given to it may be called: CombineParallelMatmul's check).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/autodiff/gradient.h"
#include "adjoint/pattern/rule.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/convert_dtype.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"
#include "convert.h"
#include "dim_bounds.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

using PyModule = std::shared_ptr<ModuleNode>;

// Binds a pass Module -> Module under `name`.
template <Module (*Pass)(const Module&)>
void def_pass(py::module_& m, const char* binding, const char* name) {
  m.def(binding, [name](const py::handle& mod) {
    PassStatsScope section(name);
    Module in = verified_module(mod, name);
    py::gil_scoped_release nogil;
    return unconst(Pass(in));
  }, py::arg("mod"));
}

GradientOptions gradient_options(const py::handle& func_name, const py::handle& require_grads,
                                 const py::handle& target_index, const py::handle& simplify) {
  GradientOptions opt;
  opt.func_name = string_arg<TransformError>(func_name, "Gradient: func_name");
  if (!require_grads.is_none()) {
    if (!py::isinstance<py::list>(require_grads) && !py::isinstance<py::tuple>(require_grads))
      throw TransformError(str("Gradient: require_grads must be a list of var names, got ", py_type_name(require_grads)));
    std::vector<std::string> names;
    for (const auto& r : require_grads) names.push_back(string_arg<TransformError>(r, "Gradient: require_grads item"));
    opt.require_grads = std::move(names);
  }
  int64_t index = int_arg<TransformError>(target_index, "Gradient: target_index");
  if (index < 0) throw TransformError(str("Gradient: target_index must be non-negative, got ", index));
  if (index > INT32_MAX) throw TransformError(str("Gradient: target_index ", index, " is out of range"));
  opt.target_index = static_cast<int>(index);
  opt.simplify = bool_arg<TransformError>(simplify, "Gradient: simplify");
  return opt;
}

// ConvertDType's dtype argument `what`: "float32" or "float64".
DType float_dtype_arg(const py::handle& name, const char* what) {
  std::string s = string_arg<TransformError>(name, str("ConvertDType: ", what));
  std::optional<DType> d = dtype_from_name(s);
  if (!d || !is_float(*d))
    throw TransformError(str("ConvertDType: ", what, " must be \"float32\" or \"float64\", got ", string_literal(s)));
  return *d;
}

// (name, "before -> after") per rule of a table, in the order they are tried.
std::vector<std::pair<std::string, std::string>> rule_table(const RuleSet& rules) {
  std::vector<std::pair<std::string, std::string>> table;
  for (const Rule& r : rules.rules()) table.emplace_back(r.name, r.before_after);
  return table;
}

// CombineParallelMatmul's check as a C++ callable: check(shared, [others])
// for a shared LHS, check([others], shared) for a shared RHS, which must
// return a bool (TransformError otherwise). Exceptions it raises propagate.
ParallelMatmulCheck group_check(const py::handle& check) {
  if (check.is_none()) return nullptr;
  if (!PyCallable_Check(check.ptr()))
    throw TransformError(str("CombineParallelMatmul: check must be callable or None, got ", py_type_name(check)));
  py::object fn = py::reinterpret_borrow<py::object>(check);
  return [fn](const ParallelMatmuls& group) {
    py::list others;
    for (const Expr& e : group.others) others.append(unconst(e));
    py::object shared = py::cast(unconst(group.shared));
    CallbackNesting nesting("CombineParallelMatmul's check");
    py::object verdict = group.shares_lhs ? fn(shared, others) : fn(others, shared);
    return bool_arg<TransformError>(verdict, "CombineParallelMatmul: the result of check");
  };
}

}  // namespace

void bind_transform(py::module_& m) {
  m.def("gradient", [](const py::handle& mod, const py::handle& func_name, const py::handle& require_grads,
                       const py::handle& target_index, const py::handle& simplify) {
    GradientOptions opt = gradient_options(func_name, require_grads, target_index, simplify);
    PassStatsScope section("Gradient");
    Module in = verified_module(mod, "Gradient");
    py::gil_scoped_release nogil;
    return unconst(gradient(in, opt));
  }, py::arg("mod"), py::arg("func_name"), py::arg("require_grads"), py::arg("target_index"), py::arg("simplify"));
  def_pass<dead_code_elimination>(m, "dead_code_elimination", "DeadCodeElimination");
  def_pass<eliminate_common_subexpr>(m, "eliminate_common_subexpr", "EliminateCommonSubexpr");
  def_pass<simplify_gradient>(m, "simplify_gradient", "SimplifyGradient");
  m.def("simplify_gradient_rules", [] { return rule_table(simplify_gradient_rules()); },
        "SimplifyGradient's rule table: (name, \"before -> after\") per rule, in the order they are tried.");
  def_pass<reorder_permute_dims_after_concat>(m, "reorder_permute_dims_after_concat", "ReorderPermuteDimsAfterConcat");
  def_pass<lift_transform_params>(m, "lift_transform_params", "LiftTransformParams");
  m.def("combine_parallel_matmul", [](const py::handle& mod, const py::handle& check) -> PyModule {
    ParallelMatmulCheck group = group_check(check);
    PassStatsScope section("CombineParallelMatmul");
    Module in = node_arg<ModuleNode>(mod, "CombineParallelMatmul", "an aj.Module");
    if (group) return unconst(combine_parallel_matmul(in, group));  // check runs Python: the GIL stays
    py::gil_scoped_release nogil;
    return unconst(combine_parallel_matmul(in));
  }, py::arg("mod"), py::arg("check"));
  m.def("reassociate_matmul", [](const py::handle& mod, const py::handle& dim_bounds) {
    DimBounds bounds = dim_bounds_arg(dim_bounds, "ReassociateMatmul: dim_bounds");
    PassStatsScope section("ReassociateMatmul");
    Module in = verified_module(mod, "ReassociateMatmul");
    py::gil_scoped_release nogil;
    return unconst(reassociate_matmul(in, bounds));
  }, py::arg("mod"), py::arg("dim_bounds"));
  m.def("convert_dtype", [](const py::handle& mod, const py::handle& dtype, const py::handle& from_dtype) {
    DType to = float_dtype_arg(dtype, "dtype"), from = float_dtype_arg(from_dtype, "from_dtype");
    PassStatsScope section("ConvertDType");
    Module in = verified_module(mod, "ConvertDType");
    py::gil_scoped_release nogil;
    return unconst(convert_dtype(in, to, from));
  }, py::arg("mod"), py::arg("dtype"), py::arg("from_dtype"));
  m.def("collect_pass_stats", [](const py::handle& run) {
    PassStats stats;
    py::object result;
    {
      CollectPassStats collecting(stats);
      result = py::reinterpret_borrow<py::object>(run)();
    }
    py::list sections;
    for (const PassStatsSection& s : stats.sections()) sections.append(py::make_tuple(s.pass, s.counts));
    return py::make_tuple(result, sections);
  }, py::arg("run"),
        "(run(), sections): what the passes run() calls on this thread did, one (pass, [(what, count), ...]) "
        "per pass or stage in the order they ran (for Pass.explain).");
  m.def("reassociate_matmul_rules", [] { return reassociate_matmul_rewrites(); },
        "ReassociateMatmul's rewrites: (name, \"before <-> after\") per kind.");
  m.def("combine_parallel_matmul_rules", [] { return combine_parallel_matmul_rewrites(); },
        "CombineParallelMatmul's rewrites: (name, \"before -> after\") per kind.");
  m.def("reorder_permute_dims_after_concat_rules", [] { return rule_table(reorder_permute_dims_after_concat_rules()); },
        "ReorderPermuteDimsAfterConcat's rule table: (name, \"before -> after\") per rule.");
}

}  // namespace aj::bindings
