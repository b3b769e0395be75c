// Private bindings of graph patterns (pattern/graph.h, graph_rewrite.h) in
// _core._pattern, for adjoint.pattern's PatternContext and rewrite_bindings:
// GraphPattern from roots and edges given from Python, the read-only view
// of a function's bindings a rewriter receives, and rewrite_graph, which
// calls a Python rewriter once per match with what the match captured as a
// dict keyed by the Pattern objects (and the names given with name=). The
// rewriter runs with the GIL held; its exceptions propagate unchanged (with
// their tracebacks).
#include <algorithm>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/verifier.h"
#include "adjoint/pattern/graph_rewrite.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

// A function's bindings as a read-only mapping var -> value, in binding
// order (a collections.abc.Mapping by registration, with its methods); the
// index it reads is built on the first lookup.
class FunctionBindings {
 public:
  explicit FunctionBindings(Function fn) : fn_(std::move(fn)) {}

  const Expr* find(const py::handle& key) const {
    std::shared_ptr<VarNode> var = node_or_null<VarNode>(key);
    if (!var) return nullptr;
    if (!index_) index_ = std::make_unique<DataflowIndex>(*fn_);
    return index_->value(var.get());
  }
  const std::vector<Binding>& bindings() const { return fn_->bindings(); }
  py::list keys() const {
    py::list vars;
    for (const Binding& b : fn_->bindings()) vars.append(py::cast(unconst(b.var)));
    return vars;
  }

 private:
  Function fn_;
  mutable std::unique_ptr<DataflowIndex> index_;
};

// The keys a capture goes under in the rewriter's dict: the Pattern objects
// with its capture name, and the name itself when the user gave it.
using Keys = std::vector<py::object>;

// A capture name of a root: its keys, and the root's nodes of that name.
struct ReportedName {
  CaptureName name;
  Keys keys;
  std::vector<const PatternNode*> nodes;
};

// What a root reports: its capture names, whether it is repeated, and the
// keys of its list of branch vars (the repeated pattern).
struct RootReport {
  std::vector<ReportedName> names;
  bool repeated = false;
  Keys list_keys;
};

struct PyGraphPattern {
  GraphPattern gp;
  std::vector<RootReport> reports;
};

Keys keys_of(const py::dict& keys, const std::string& name) {
  py::str n(name);
  if (!keys.contains(n)) return {};
  Keys out;
  for (const auto& k : keys[n]) out.push_back(py::reinterpret_borrow<py::object>(k));
  return out;
}

std::vector<GraphRoot> roots_arg(const py::handle& obj, const py::dict& keys, std::vector<RootReport>& reports) {
  if (!py::isinstance<py::list>(obj)) throw Error(str("GraphPattern: expected a list of roots, got ", py_type_name(obj)));
  std::vector<GraphRoot> roots;
  for (const auto& item : obj) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 3) throw Error("GraphPattern: a root is (pattern, repeated, list name or None)");
    if (!py::isinstance<Pattern>(t[0])) throw Error(str("GraphPattern: expected a pattern, got ", py_type_name(t[0])));
    GraphRoot r{t[0].cast<Pattern>(), bool_arg(t[1], "GraphPattern: repeated")};
    RootReport report;
    auto named = nodes_by_name(r.pattern);
    for (const CaptureName& c : capture_names(r.pattern))
      report.names.push_back({c, keys_of(keys, c.name), std::move(named[c.name])});
    report.repeated = r.repeated;
    if (!t[2].is_none()) report.list_keys = keys_of(keys, string_arg(t[2], "GraphPattern: list name"));
    roots.push_back(std::move(r));
    reports.push_back(std::move(report));
  }
  return roots;
}

std::vector<GraphEdge> edges_arg(const py::handle& obj) {
  if (!py::isinstance<py::list>(obj)) throw Error(str("GraphPattern: expected a list of edges, got ", py_type_name(obj)));
  std::vector<GraphEdge> edges;
  for (const auto& item : obj) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 4) throw Error("GraphPattern: an edge is (from, to, index, only)");
    edges.push_back({string_arg(t[0], "GraphPattern: edge"), string_arg(t[1], "GraphPattern: edge"),
                     static_cast<int>(int_arg(t[2], "GraphPattern: edge index")), bool_arg(t[3], "GraphPattern: only")});
  }
  return edges;
}

// ---- captures as a dict ----

py::object expr_out(const Expr& e) { return py::cast(unconst(e)); }

// What one branch captured under a name: the value, a list for a name in a
// run, or None when the name captured nothing there.
py::object branch_value(const ReportedName& n, const Match& m, const Binding& b) {
  if (n.name.is_list) {
    py::list items;
    for (const Expr& e : m.list(n.name.name)) items.append(expr_out(e));
    return std::move(items);
  }
  for (const Capture& cap : m.captures())
    if (cap.scope == 0 && std::find(n.nodes.begin(), n.nodes.end(), cap.pattern) != n.nodes.end())
      return &*cap.expr == &b.value ? expr_out(b.var) : expr_out(*cap.expr);
  return py::none();
}

void put(py::dict& out, const Keys& keys, const py::object& value) {
  for (const py::object& k : keys) out[k] = value;
}

void report_root(const PyGraphPattern& g, size_t r, const GraphMatch& m, const FunctionNode& fn, py::dict& out) {
  const RootReport& report = g.reports[r];
  const auto& bindings = m.bindings[r];
  const auto& captures = m.captures[r];
  py::object branch_vars;
  for (const ReportedName& n : report.names) {
    if (n.keys.empty() || out.contains(n.keys[0])) continue;  // a shared name, reported by an earlier root
    py::object value;
    if (!report.repeated || (g.gp.is_shared(n.name.name) && !n.name.is_list)) {
      value = branch_value(n, captures[0], fn.bindings()[bindings[0]]);
      if (value.is_none()) continue;
    } else {
      py::list per_branch;
      for (size_t k = 0; k < bindings.size(); ++k)
        per_branch.append(branch_value(n, captures[k], fn.bindings()[bindings[k]]));
      value = std::move(per_branch);
    }
    if (n.name.name == g.gp.roots()[r].pattern->name()) branch_vars = value;
    put(out, n.keys, value);
  }
  if (branch_vars) put(out, report.list_keys, branch_vars);
}

// {pattern or name: what it matched} for the rewriter.
py::dict matchings(const PyGraphPattern& g, const GraphMatch& m, const FunctionNode& fn) {
  py::dict out;
  for (size_t r = 0; r < m.bindings.size(); ++r) report_root(g, r, m, fn, out);
  return out;
}

// ---- the rewriter's answer ----

std::vector<GraphReplacement> replacements_from(const py::handle& out, const std::string& fn_name) {
  std::vector<GraphReplacement> reps;
  if (out.is_none()) return reps;
  if (!py::isinstance<py::dict>(out))
    throw Error(str("rewrite_bindings: function '", fn_name, "': the rewriter returned ", py_type_name(out),
                    "; it must return a dict {var: new value} (or None)"));
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(out)) {
    Var var = node_or_null<VarNode>(key);
    if (!var)
      throw Error(str("rewrite_bindings: function '", fn_name, "': a key of the rewriter's dict is ",
                      py_type_name(key), ", not an aj.Var of the function"));
    Expr new_value = node_or_null<ExprNode>(value);
    if (!new_value)
      throw TypeInferenceError(str("rewrite_bindings: function '", fn_name, "': the new value for '", var->name_hint(),
                                   "' is ", value.is_none() ? "None" : py_type_name(value), ", not an aj.Expr"));
    reps.push_back({std::move(var), std::move(new_value)});
  }
  return reps;
}

// rewriter(matchings, bindings) -> {var: expr} for each match; one bindings
// view per walk.
GraphRewriter python_rewriter(const PyGraphPattern& g, const py::object& rewriter) {
  auto view_of = std::make_shared<std::pair<Function, py::object>>();
  return [&g, rewriter, view_of](const GraphMatch& m, const GraphWalk& w) {
    if (view_of->first != w.function) *view_of = {w.function, py::cast(FunctionBindings(w.function))};
    CallbackNesting nesting("rewrite_bindings' rewriter");
    py::object out = rewriter(matchings(g, m, *w.function), view_of->second);
    return replacements_from(out, w.function_name);
  };
}

Function verified_function(const NamedFunction& f) {
  verify_input(std::make_shared<ModuleNode>(std::vector<std::pair<std::string, Function>>{{f.name, f.fn}}),
               "rewrite_bindings");
  return f.fn;
}

void bind_function_bindings(py::module_& m) {
  py::class_<FunctionBindings>(m, "FunctionBindings", "A function's bindings: a read-only mapping var -> value.")
      .def("__getitem__", [](const FunctionBindings& b, const py::handle& key) {
        const Expr* e = b.find(key);
        if (!e) throw py::key_error(py::repr(key).cast<std::string>());
        return expr_out(*e);
      })
      .def("__contains__", [](const FunctionBindings& b, const py::handle& key) { return b.find(key) != nullptr; })
      .def("__len__", [](const FunctionBindings& b) { return b.bindings().size(); })
      .def("__iter__", [](const FunctionBindings& b) { return py::iter(b.keys()); })
      .def("keys", &FunctionBindings::keys)
      .def("values", [](const FunctionBindings& b) {
        py::list values;
        for (const Binding& x : b.bindings()) values.append(expr_out(x.value));
        return values;
      })
      .def("items", [](const FunctionBindings& b) {
        py::list items;
        for (const Binding& x : b.bindings()) items.append(py::make_tuple(expr_out(x.var), expr_out(x.value)));
        return items;
      })
      .def("get", [](const FunctionBindings& b, const py::handle& key, const py::object& otherwise) {
        const Expr* e = b.find(key);
        return e ? expr_out(*e) : otherwise;
      }, py::arg("key"), py::arg("default") = py::none())
      .def("__repr__", [](const FunctionBindings& b) { return str("FunctionBindings(", b.bindings().size(), " bindings)"); });
}

}  // namespace

void bind_pattern_graph(py::module_& m) {
  bind_function_bindings(m);
  py::class_<PyGraphPattern>(m, "GraphPattern", "Roots and edges of a PatternContext, checked and planned.")
      .def(py::init([](const py::handle& roots, const py::handle& edges, const py::dict& keys) {
        std::vector<RootReport> reports;
        std::vector<GraphRoot> rs = roots_arg(roots, keys, reports);
        return PyGraphPattern{GraphPattern(std::move(rs), edges_arg(edges)), std::move(reports)};
      }), py::arg("roots"), py::arg("edges"), py::arg("keys"),
           "roots: [(pattern, repeated, list name or None)]; edges: [(from, to, index, only)]; keys: {capture name: "
           "[the keys its value goes under in the rewriter's dict]}.")
      .def("is_shared", [](const PyGraphPattern& g, const std::string& name) { return g.gp.is_shared(name); })
      .def("__repr__", [](const PyGraphPattern& g) { return "GraphPattern(" + g.gp.to_string() + ")"; });
  m.def("rewrite_graph", [](const py::handle& target, const PyGraphPattern& g, const py::object& rewriter,
                            const py::handle& max_rounds) -> py::object {
    int rounds = static_cast<int>(int_arg(max_rounds, "rewrite_bindings: max_rounds"));
    GraphRewriter fn = python_rewriter(g, rewriter);
    if (py::isinstance<NamedFunction>(target)) {
      const auto& f = target.cast<const NamedFunction&>();
      return py::cast(NamedFunction{f.name, rewrite_graph(verified_function(f), f.name, g.gp, fn, rounds)});
    }
    Module mod = verified_module(target, "rewrite_bindings");
    return py::cast(unconst(rewrite_graph(mod, g.gp, fn, rounds)));
  }, py::arg("target"), py::arg("graph"), py::arg("rewriter"), py::arg("max_rounds"),
        "target (an aj.Module or aj.Function) with rewriter(captures, bindings) -> {var: expr} applied to every "
        "match of graph, walk after walk.");
}

}  // namespace aj::bindings
