// Private bindings of the C++ pattern matcher and rewriter (pattern/,
// transform/rewrite.h), as _core._pattern: what adjoint's tests use to check
// the matcher and the rewriter until the public adjoint.pattern module wraps
// them. Replacements may be Python callables; they run with the GIL held
// (the rewrite does not release it) and their exceptions propagate.
#include <optional>
#include <string_view>
#include <unordered_map>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/verifier.h"
#include "adjoint/pattern/rule.h"
#include "adjoint/transform/rewrite.h"
#include "adjoint/transform/rule_pass.h"
#include "convert.h"
#include "python_rule.h"

namespace py = pybind11;

namespace aj::bindings {

void bind_pattern_graph(py::module_& m);  // pattern_graph.cc

namespace {

// A with block of Python putting off pattern name checks (DeferredNameChecks).
struct NameChecksPutOff {
  std::optional<DeferredNameChecks> active;
};

Pattern pattern_arg(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<Pattern>(obj))
    throw Error(str(what, ": expected a pattern, got ", obj.is_none() ? "None" : py_type_name(obj)));
  return obj.cast<Pattern>();
}

std::vector<Pattern> patterns_arg(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj))
    throw Error(str(what, ": expected a list of patterns, got ", py_type_name(obj)));
  std::vector<Pattern> out;
  size_t i = 0;
  for (const auto& item : obj) out.push_back(pattern_arg(item, str(what, "[", i++, "]")));
  return out;
}

KwAttrs attrs_arg(const py::handle& obj, const std::string& what) {
  if (!py::isinstance<py::dict>(obj)) throw Error(str(what, ": expected a dict of attrs, got ", py_type_name(obj)));
  KwAttrs out;
  for (const auto& kv : py::reinterpret_borrow<py::dict>(obj)) {
    std::string name = string_arg(kv.first, what + ": attr name");
    out.emplace_back(name, attr_from_py(kv.second, str(what, ": attr '", name, "'")));
  }
  return out;
}

// What a name captured, gathered for every name in one pass over the
// captures: the first value, and the values as Match::list gives them.
struct NameValues {
  const Expr* first = nullptr;
  std::vector<const Expr*> list;
  bool list_done = false;  // a second run of the name: the same values again
};

// {name: expr, or list of exprs for a run's name}, for each of the `names` of
// the pattern that matched (capture_names):
// looked up in the match when it is small, else gathered in one pass (a
// lookup walks the captures, which would be quadratic in a large pattern).
py::dict captures_out(const std::vector<CaptureName>& names, const Match& m) {
  constexpr size_t kGatherFrom = 32;
  if (m.captures().size() < kGatherFrom) {
    py::dict out;
    for (const CaptureName& c : names) {
      if (c.is_list) {
        py::list items;
        for (const Expr& e : m.list(c.name)) items.append(unconst(e));
        out[py::str(c.name)] = items;
      } else if (m.has(c.name)) {
        out[py::str(c.name)] = unconst(m[c.name]);
      }
    }
    return out;
  }
  std::unordered_map<std::string_view, NameValues> values;
  for (const Capture& c : m.captures()) {
    if (c.pattern->name().empty()) continue;
    NameValues& v = values[c.pattern->name()];
    if (!v.first) v.first = c.expr;
    if (v.list_done) continue;
    if (c.pattern->kind() == PatternKind::kRepeated && c.element == 0 && !v.list.empty()) v.list_done = true;
    else v.list.push_back(c.expr);
  }
  py::dict out;
  for (const CaptureName& c : names) {
    auto it = values.find(c.name);
    if (c.is_list) {
      py::list items;
      if (it != values.end())
        for (const Expr* e : it->second.list) items.append(unconst(*e));
      out[py::str(c.name)] = items;
    } else if (it != values.end()) {
      out[py::str(c.name)] = unconst(*it->second.first);
    }
  }
  return out;
}

const Expr& bound_value(const DataflowIndex& index, const std::string& var_name) {
  for (const auto& b : index.function().bindings())
    if (b.var->name_hint() == var_name) return b.value;
  throw Error(str("match: the function binds no var named '", var_name, "'"));
}

// The bindings of no function: every var stands for itself.
class NoBindings final : public Bindings {
 public:
  const ExprNode* bound_value(const VarNode*) const override { return nullptr; }
  size_t num_users(const VarNode*) const override { return 0; }
};

// A rule whose replacement is replacement(root, captures) -> expr or None.
Rule rule_arg(const py::handle& obj, size_t i) {
  std::string what = str("rewrite: rules[", i, "]");
  if (!py::isinstance<py::tuple>(obj) || py::len(obj) != 4)
    throw Error(str(what, ": expected (name, before_after, pattern, replacement)"));
  auto t = py::reinterpret_borrow<py::tuple>(obj);
  Pattern pattern = pattern_arg(t[2], what + ": pattern");
  py::object fn = t[3];
  if (!PyCallable_Check(fn.ptr())) throw Error(str(what, ": the replacement is not callable"));
  Replacement replacement = [names = capture_names(pattern), fn](const Match& m) -> Expr {
    CallbackNesting nesting("a rewriter");
    py::object out = fn(unconst(m.root()), captures_out(names, m));
    if (out.is_none()) return nullptr;
    if (Expr e = node_or_null<ExprNode>(out)) return e;
    throw TypeInferenceError(str("the replacement returned ", py_type_name(out), ", not an aj.Expr or None"));
  };
  return Rule{string_arg(t[0], what + ": name"), string_arg(t[1], what + ": before_after"), pattern,
              std::move(replacement)};
}

}  // namespace

Rule python_rule(const py::handle& obj, size_t i) { return rule_arg(obj, i); }

void bind_pattern(py::module_& core) {
  py::module_ m = core.def_submodule(
      "_pattern", "Private: the C++ pattern matcher and rewriter, for adjoint's tests (adjoint.pattern will wrap them).");
  py::class_<Pattern>(m, "Pattern", "An immutable pattern over the IR.")
      .def("__or__", [](const Pattern& a, const py::handle& b) { return a | pattern_arg(b, "|"); })
      .def("__and__", [](const Pattern& a, const py::handle& b) { return a & pattern_arg(b, "&"); })
      .def("__invert__", [](const Pattern& a) { return ~a; })
      .def("named", [](const Pattern& p, const py::handle& name) { return p.named(string_arg(name, "named")); })
      .def("has_dtype", [](const Pattern& p, const py::handle& d) { return p.has_dtype(dtype_from_py(d, "has_dtype")); })
      .def("has_shape", [](const Pattern& p, const py::handle& s) { return p.has_shape(shape_from_py(s, "has_shape")); })
      .def("has_attr", [](const Pattern& p, const py::handle& a) { return p.has_attr(attrs_arg(a, "has_attr")); })
      .def_property_readonly("is_run", [](const Pattern& p) { return p->kind() == PatternKind::kRepeated; },
                             "Whether this is a run (repeated), which stands in a list, not for one expr.")
      .def("__repr__", &Pattern::to_string);
  m.attr("MAX_DEPTH") = kMaxPatternDepth;
  m.def("wildcard", &wildcard);
  m.def("is_op", [](const py::handle& op, const py::handle& args, const py::handle& attrs) {
    return is_op(string_arg(op, "is_op"))(patterns_arg(args, "is_op: args"), attrs_arg(attrs, "is_op"));
  }, py::arg("op"), py::arg("args"), py::arg("attrs") = py::dict());
  m.def("is_const", &is_const);
  m.def("is_var", [](const std::string& hint) { return is_var(hint); }, py::arg("name_hint") = "");
  m.def("is_tuple", [](const py::handle& fields) { return is_tuple(patterns_arg(fields, "is_tuple")); });
  m.def("is_tuple_get_item", [](const py::handle& p, const py::handle& index) {
    return is_tuple_get_item(pattern_arg(p, "is_tuple_get_item"),
                             static_cast<int>(int_arg(index, "is_tuple_get_item: index")));
  }, py::arg("tuple"), py::arg("index") = -1);
  m.def("repeated", [](const py::handle& p, const std::string& name, const std::string& count_name) {
    return repeated(pattern_arg(p, "repeated"), name, count_name);
  }, py::arg("element"), py::arg("name") = "", py::arg("count_name") = "");
  m.def("match", [](const py::handle& p, const NamedFunction& fn, const py::handle& var_name) -> py::object {
    Pattern pattern = pattern_arg(p, "match");
    verify_input(std::make_shared<ModuleNode>(std::vector<std::pair<std::string, Function>>{{fn.name, fn.fn}}), "match");
    DataflowIndex index(*fn.fn);
    IndexBindings bindings(index);
    const Expr& value = bound_value(index, string_arg(var_name, "match: var name"));
    std::optional<Match> found = match(pattern, value, bindings);
    if (!found) return py::none();
    return captures_out(capture_names(pattern), *found);
  }, py::arg("pattern"), py::arg("function"), py::arg("var_name"),
        "The captures of pattern on the value bound to var_name in function, or None.");
  py::class_<NameChecksPutOff>(m, "_DeferredNameChecks",
                               "In a with block, the name checks of patterns built on this thread are put off; "
                               "check_names checks a root then.")
      .def(py::init<>())
      .def("__enter__", [](NameChecksPutOff& d) -> NameChecksPutOff& {
        d.active.emplace();
        return d;
      })
      .def("__exit__", [](NameChecksPutOff& d, const py::args&) {
        d.active.reset();
        return false;
      });
  m.def("check_names", [](const py::handle& p) { check_pattern_names(pattern_arg(p, "check_names")); },
        py::arg("pattern"), "The name checks every pattern constructor makes, on pattern as a whole.");
  m.def("match_expr", [](const py::handle& p, const py::handle& e, const py::handle& fn) -> py::object {
    Pattern pattern = pattern_arg(p, "match");
    Expr expr = node_arg<ExprNode>(e, "match: expr", "an aj.Expr");
    if (fn.is_none()) {
      NoBindings none;
      std::optional<Match> found = match(pattern, expr, none);
      return found ? py::object(captures_out(capture_names(pattern), *found)) : py::none();
    }
    if (!py::isinstance<NamedFunction>(fn)) throw Error(str("match: expected an aj.Function or None, got ", py_type_name(fn)));
    const auto& named = fn.cast<const NamedFunction&>();
    verify_input(std::make_shared<ModuleNode>(std::vector<std::pair<std::string, Function>>{{named.name, named.fn}}),
                 "match");
    DataflowIndex index(*named.fn);
    IndexBindings bindings(index);
    std::optional<Match> found = match(pattern, expr, bindings);
    return found ? py::object(captures_out(capture_names(pattern), *found)) : py::none();
  }, py::arg("pattern"), py::arg("expr"), py::arg("function") = py::none(),
        "The captures of pattern on expr, seeing through the bindings of function (None: no bindings), or None.");
  m.def("can_match_call", [](const py::handle& p) { return can_match_call(pattern_arg(p, "can_match_call")); });
  m.def("rewrite", [](const py::handle& mod, const py::list& rules, int max_rounds) {
    std::vector<Rule> list;
    for (size_t i = 0; i < rules.size(); ++i) list.push_back(rule_arg(rules[i], i));
    RuleSet set(std::move(list));
    RewriteOptions options;
    options.max_rounds = max_rounds;
    return unconst(apply_rules(node_arg<ModuleNode>(mod, "rewrite", "an aj.Module"), set, options, "rewrite"));
  }, py::arg("mod"), py::arg("rules"), py::arg("max_rounds") = 8,
        "mod with each call rewritten by the first rule that matches it (rules: (name, before_after, pattern, "
        "replacement(root, captures) -> expr or None)); dead bindings removed from the functions that changed; "
        "mod itself when none did.");
  bind_pattern_graph(m);
}

}  // namespace aj::bindings
