// Bindings of declarative rewriters (Python's P.Rewriter), as
// _core._rewriter: rules read from a module's `pattern` and `replacement`
// functions (pattern/template_rule.h), and the rule-set pass
// (transform/rule_pass.h) over a list that mixes them with Python rules
// (python_rule.h). When every rule is C++ the rewrite runs with the GIL
// released; a Python rule runs with it held and its exceptions propagate.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/pattern/template_rule.h"
#include "adjoint/transform/pass_stats.h"
#include "adjoint/transform/passes.h"
#include "adjoint/transform/rule_pass.h"
#include "convert.h"
#include "python_rule.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

// The rules of a list: C++ rules as they are, tuples as Python rules.
std::vector<Rule> rules_arg(const py::handle& obj, bool& has_python_rules) {
  if (!py::isinstance<py::list>(obj)) throw Error(str("rewrite: expected a list of rules, got ", py_type_name(obj)));
  std::vector<Rule> out;
  size_t i = 0;
  for (const auto& item : obj) {
    if (py::isinstance<Rule>(item)) {
      out.push_back(item.cast<const Rule&>());
    } else {
      out.push_back(python_rule(item, i));
      has_python_rules = true;
    }
    ++i;
  }
  return out;
}

}  // namespace

void bind_pattern_rewriter(py::module_& core) {
  py::module_ m = core.def_submodule(
      "_rewriter", "Private: rules written as IR and the rule-set pass, for adjoint.pattern.Rewriter.");
  py::class_<Rule>(m, "Rule", "A rewrite rule made in C++: a name, its \"pattern -> replacement\" text.")
      .def_property_readonly("name", [](const Rule& r) { return r.name; })
      .def_property_readonly("before_after", [](const Rule& r) { return r.before_after; })
      .def("renamed", [](const Rule& r, const py::handle& name) {
        Rule out = r;
        out.name = string_arg(name, "Rule.renamed");
        return out;
      }, py::arg("name"))
      .def("__repr__", [](const Rule& r) { return str(r.name, ": ", r.before_after); });
  m.def("rule_from_module", [](const py::handle& mod, const py::handle& name) {
    Module in = node_arg<ModuleNode>(mod, "Rewriter.from_module", "an aj.Module");
    return template_rule(string_arg(name, "Rewriter: name"), in);
  }, py::arg("mod"), py::arg("name"),
        "The rule \"pattern -> replacement\" of a module holding those two functions.");
  m.def("simplify_gradient_rules", [] { return simplify_gradient_rules().rules(); },
        "SimplifyGradient's C++ rules, in order (a Rewriter of some of them runs them alone).");
  m.def("rewrite", [](const py::handle& mod, const py::handle& rules, const py::handle& max_rounds) {
    PassStatsScope section("Rewriter");
    Module in = node_arg<ModuleNode>(mod, "Rewriter", "an aj.Module");
    bool has_python_rules = false;
    RuleSet set(rules_arg(rules, has_python_rules));
    RewriteOptions options;
    options.max_rounds = static_cast<int>(int_arg(max_rounds, "Rewriter: max_rounds"));
    if (has_python_rules) return unconst(apply_rules(in, set, options));
    Module out;
    {
      py::gil_scoped_release nogil;
      out = apply_rules(in, set, options);
    }
    return unconst(out);
  }, py::arg("mod"), py::arg("rules"), py::arg("max_rounds"),
        "mod with each call rewritten by the first rule that matches it (rules: _rewriter.Rule objects, or "
        "(name, before_after, pattern, replacement(root, captures) -> expr or None) tuples), to a fixed point; "
        "dead bindings removed from the functions that changed.");
}

}  // namespace aj::bindings
