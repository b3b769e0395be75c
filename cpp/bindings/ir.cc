// Bindings of the IR: types, exprs, functions, modules, the text format,
// structural equality, the verifier, the function builder and the op
// registry's schemas. Nodes are immutable: only getters are exposed. Their
// reprs, HTML displays and pickling are Python's (display.py, ir.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/builder.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/ir/structural.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

using PyType = std::shared_ptr<TypeNode>;
using PyExpr = std::shared_ptr<ExprNode>;
using PyVar = std::shared_ptr<VarNode>;
using PyModule = std::shared_ptr<ModuleNode>;

// Bindings given as (var, value) pairs.
std::vector<Binding> bindings_in(const py::handle& list) {
  if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list))
    throw Error(str("Function: bindings must be a list of (var, value) pairs, got ", py_type_name(list)));
  std::vector<Binding> out;
  size_t i = 0;
  for (const auto& item : list) {
    std::string what = str("Function: bindings[", i++, "]");
    if (!py::isinstance<py::tuple>(item) && !py::isinstance<py::list>(item))
      throw Error(str(what, ": expected a (var, value) pair, got ", py_type_name(item)));
    auto pair = py::reinterpret_borrow<py::sequence>(item);
    if (pair.size() != 2) throw Error(str(what, ": expected a (var, value) pair, got ", pair.size(), " items"));
    out.push_back({node_arg<VarNode>(pair[0], what + " var", "an aj.Var"), expr_arg(pair[1], what + " value")});
  }
  return out;
}

py::list exprs_out(const std::vector<Expr>& es) {
  py::list out;
  for (const auto& e : es) out.append(unconst(e));
  return out;
}

py::dict func_attrs_out(const FuncAttrs& attrs) {
  py::dict d;
  for (const auto& kv : attrs) d[py::str(kv.first)] = attr_to_py(kv.second);
  return d;
}

py::dict call_attrs_out(const CallNode& c) {
  py::dict d;
  for (size_t i = 0; i < c.attrs().size(); ++i) d[py::str(c.op().attrs[i].name)] = attr_to_py(c.attrs()[i]);
  return d;
}

Module module_arg(const py::handle& m, const std::string& what) { return node_arg<ModuleNode>(m, what, "an aj.Module"); }

// Structural comparison accepts two modules or two functions.
template <typename R, typename FnM, typename FnF>
R on_pair(const py::object& a, const py::object& b, FnM on_modules, FnF on_functions) {
  if (py::isinstance<ModuleNode>(a) && py::isinstance<ModuleNode>(b))
    return on_modules(a.cast<PyModule>(), b.cast<PyModule>());
  if (py::isinstance<NamedFunction>(a) && py::isinstance<NamedFunction>(b))
    return on_functions(a.cast<NamedFunction>().fn, b.cast<NamedFunction>().fn);
  throw Error(str("structural comparison needs two aj.Module or two aj.Function, got ",
                  py_type_name(a), " and ", py_type_name(b)));
}

py::dict op_schema(const OpDef& op) {
  py::dict d;
  d["name"] = op.name;
  d["family"] = op.family;
  d["args"] = op.arg_names;
  py::list attrs;
  for (const auto& a : op.attrs) {
    py::dict ad;
    ad["name"] = a.name;
    ad["kind"] = attr_kind_name(a.kind);
    ad["required"] = !a.default_value.has_value();
    ad["default"] = a.default_value ? attr_to_py(*a.default_value) : py::none();
    attrs.append(ad);
  }
  d["attrs"] = attrs;
  d["differentiable"] = op.differentiable;
  d["has_vjp"] = static_cast<bool>(op.vjp);
  d["has_kernel"] = static_cast<bool>(op.kernel);
  d["doc"] = op.doc;
  return d;
}

Dim dim_in(const py::handle& o) {
  if (py::isinstance<Dim>(o)) return o.cast<Dim>();
  if (py::isinstance<py::str>(o)) return Dim::parse(string_arg(o, "Dim"));
  Shape s = shape_from_py(py::make_tuple(o), "Dim");
  return s[0];
}

// Python's hash of the int a constant dim is, or of a symbolic dim's
// canonical text: a Dim hashes as the int or canonical string it equals.
py::ssize_t dim_py_hash(const Dim& d) {
  if (d.is_const()) return py::hash(py::int_(d.value()));
  return py::hash(py::str(d.to_string()));
}

void bind_dims(py::module_& m) {
  py::class_<Dim>(m, "Dim",
                  "A dim: an int or a polynomial over named symbols, in canonical form.\n\n"
                  "A dim string, here, in a shape or in text, is an integer polynomial in Python\n"
                  "syntax: ints, names, + - * and ** with an int exponent from 0 to 64, and\n"
                  "parentheses, with Python's precedence (-n**2 is -(n**2)). Division, floats,\n"
                  "negative exponents and other characters are a TypeInferenceError (a ParseError\n"
                  "in text) naming the string and the problem.\n\n"
                  "A Dim equals the ints, strings and Dims that denote the same polynomial, and\n"
                  "hashes as the int it is (Dim(2**61) like 2**61) or, when symbolic, as its\n"
                  "canonical text str(d) (Dim(\"2*n + 1\") like \"2*n + 1\"), so it finds and is found\n"
                  "by either in a set or dict. A string spelled otherwise (\"1 + 2*n\") compares\n"
                  "equal but cannot hash alike (no hash matches every spelling): look such strings\n"
                  "up as Dims, or as str(Dim(s)).")
      .def(py::init([](const py::handle& v) { return dim_in(v); }), py::arg("value"))
      .def_property_readonly("is_const", &Dim::is_const)
      .def_property_readonly("value", [](const Dim& d) -> py::object {
        if (d.is_const()) return py::int_(d.value());
        return py::none();
      }, "The int value, or None when symbolic.")
      .def_property_readonly("symbols", &Dim::symbols)
      .def("evaluate", [](const Dim& d, const py::handle& env_arg) -> int64_t {
        std::map<std::string, int64_t> env;
        for (const auto& kv : dict_arg(env_arg, "Dim.evaluate: env"))
          env[string_arg(kv.first, "Dim.evaluate: a symbol")] = int_arg(kv.second, "Dim.evaluate: a symbol's value");
        auto v = d.evaluate(env);
        if (!v) throw Error(str("cannot evaluate dim ", d.to_string(), ": a symbol is unbound"));
        return *v;
      }, py::arg("env"))
      .def("__add__", [](const Dim& a, const py::handle& b) { return a + dim_in(b); })
      .def("__radd__", [](const Dim& a, const py::handle& b) { return dim_in(b) + a; })
      .def("__sub__", [](const Dim& a, const py::handle& b) { return a - dim_in(b); })
      .def("__rsub__", [](const Dim& a, const py::handle& b) { return dim_in(b) - a; })
      .def("__mul__", [](const Dim& a, const py::handle& b) { return a * dim_in(b); })
      .def("__rmul__", [](const Dim& a, const py::handle& b) { return dim_in(b) * a; })
      .def("__eq__", [](const Dim& a, const py::handle& b) {
        try {
          return a == dim_in(b);
        } catch (const Error&) {
          return false;
        }
      })
      .def("__hash__", &dim_py_hash)
      .def("__str__", &Dim::to_string)
      .def("__repr__", [](const Dim& d) { return "Dim(\"" + d.to_string() + "\")"; });
}

void bind_types(py::module_& m) {
  py::class_<TypeNode, PyType>(m, "Type", "The type of a value: a tensor (shape, dtype) or a tuple of types.")
      .def_property_readonly("is_tensor", &TypeNode::is_tensor)
      .def_property_readonly("is_tuple", &TypeNode::is_tuple)
      .def_property_readonly("shape", [](const TypeNode& t) {
        if (!t.is_tensor()) throw Error(str("a tuple type has no shape: ", t.to_string()));
        return shape_to_py(t.shape());
      }, "Dims: ints, and strings for symbolic dims.")
      .def_property_readonly("dtype", [](const TypeNode& t) {
        if (!t.is_tensor()) throw Error(str("a tuple type has no dtype: ", t.to_string()));
        return std::string(dtype_name(t.dtype()));
      })
      .def_property_readonly("ndim", [](const TypeNode& t) {
        if (!t.is_tensor()) throw Error(str("a tuple type has no rank: ", t.to_string()));
        return t.ndim();
      })
      .def_property_readonly("fields", [](const TypeNode& t) {
        py::list out;
        for (const auto& f : t.fields()) out.append(unconst(f));
        return out;
      })
      .def("__str__", &TypeNode::to_string)
      .def("__repr__", &TypeNode::to_string)
      .def("__eq__", [](const PyType& a, const py::object& b) {
        return py::isinstance<TypeNode>(b) && type_equal(a, b.cast<PyType>());
      })
      .def("__hash__", [](const PyType& t) { return type_hash(t); });
  m.def("_interned_tensor_types", &interned_tensor_types,
        "Entries of the tensor type intern table (for tests of its upkeep).");
  m.def("TensorType", [](const py::handle& shape, const py::handle& dtype) {
    return unconst(tensor_type_from_py(shape, dtype, "TensorType"));
  }, py::arg("shape"), py::arg("dtype") = "float32", "A tensor type: TensorType((3, \"n\"), \"float32\").");
  m.def("TupleType", [](const py::handle& fields) {
    auto fs = node_list_arg<TypeNode>(fields, "TupleType: fields", "aj.Type");
    try {
      return unconst(TypeNode::tuple(std::vector<Type>(fs.begin(), fs.end())));
    } catch (const TypeInferenceError& e) {
      throw TypeInferenceError(str("TupleType: ", e.what()));
    }
  }, py::arg("fields"));
}

void bind_exprs(py::module_& m) {
  py::class_<ExprNode, PyExpr>(m, "Expr", "An IR expression; every expr has a type.")
      .def_property_readonly("type", [](const ExprNode& e) { return unconst(e.type()); });
  py::class_<VarNode, ExprNode, PyVar>(m, "Var", "A variable: a param or the result of a binding.")
      .def(py::init([](const py::handle& name_arg, const py::handle& type) {
        std::string name = string_arg(name_arg, "Var: name_hint");
        return std::make_shared<VarNode>(name, node_arg<TypeNode>(type, "Var '" + name + "'", "an aj.Type"));
      }), py::arg("name_hint"), py::arg("type"))
      .def_property_readonly("name_hint", &VarNode::name_hint);
  py::class_<ConstantNode, ExprNode, std::shared_ptr<ConstantNode>>(m, "Constant", "A tensor value.")
      .def(py::init([](const py::handle& value, const py::object& dtype) {
        std::optional<DType> dt;
        if (!dtype.is_none()) dt = dtype_from_py(dtype, "Constant");
        return std::make_shared<ConstantNode>(ndarray_from_py(value, dt, "Constant"));
      }), py::arg("value"), py::arg("dtype") = py::none(),
           "The value as NumPy reads it (np.asarray), of `dtype` when given: cast to it only when no number "
           "changes (1.5 or NaN into an int, 2**40 into int32 and 2 into bool are an aj.Error).")
      .def_property_readonly("data", [](const ConstantNode& c) { return ndarray_to_py(c.data()); },
                             "The value as a read-only NumPy array (a view: constants are immutable).");
  py::class_<CallNode, ExprNode, std::shared_ptr<CallNode>>(m, "Call", "A call of an op on leaves, with attrs.")
      .def_property_readonly("op", [](const CallNode& c) { return c.op().name; })
      .def_property_readonly("args", [](const CallNode& c) { return exprs_out(c.args()); })
      .def_property_readonly("attrs", &call_attrs_out)
      .def(py::init([](const py::handle& op_name, const py::handle& args, const py::handle& attrs) {
        const OpDef& op = OpRegistry::global().get(string_arg(op_name, "Call: op"));
        std::vector<Expr> in = exprs_in(args, What("op '", op.name, "': args"));
        return unconst(make_call(op, std::move(in), resolve_attrs(op, {}, call_attrs_in(op, attrs))));
      }), py::arg("op"), py::arg("args"), py::arg("attrs") = py::dict(),
      "A call with attr defaults filled in and its type inferred (not emitted anywhere).");
  py::class_<TupleNode, ExprNode, std::shared_ptr<TupleNode>>(m, "Tuple", "A tuple of exprs.")
      .def(py::init([](const py::handle& fields) {
        return std::make_shared<TupleNode>(exprs_in(fields, "Tuple: fields"));
      }), py::arg("fields"))
      .def_property_readonly("fields", [](const TupleNode& t) { return exprs_out(t.fields()); });
  py::class_<TupleGetItemNode, ExprNode, std::shared_ptr<TupleGetItemNode>>(m, "TupleGetItem")
      .def(py::init([](const py::handle& tuple, const py::handle& index) {
        Expr t = expr_arg(tuple, "TupleGetItem: tuple");
        return std::make_shared<TupleGetItemNode>(t, int_arg<TypeInferenceError>(index, "TupleGetItem: index"));
      }), py::arg("tuple"), py::arg("index"))
      .def_property_readonly("tuple", [](const TupleGetItemNode& g) { return unconst(g.tuple()); })
      .def_property_readonly("index", &TupleGetItemNode::index);
  py::class_<Binding>(m, "Binding", "var = value")
      .def_property_readonly("var", [](const Binding& b) { return unconst(b.var); })
      .def_property_readonly("value", [](const Binding& b) { return unconst(b.value); });
}

void bind_functions(py::module_& m) {
  py::class_<NamedFunction>(m, "Function", "A function of a module: params, bindings, a returned expr, attrs.")
      .def(py::init([](const py::handle& params, const py::handle& bindings, const py::handle& ret,
                       const py::handle& attrs, const py::handle& name) {
        auto ps = node_list_arg<VarNode>(params, "Function: params", "aj.Var");
        return NamedFunction{checked_function_name(string_arg(name, "Function: name"), "Function"),
                             std::make_shared<FunctionNode>(std::vector<Var>(ps.begin(), ps.end()),
                                                            bindings_in(bindings), expr_arg(ret, "Function: ret"),
                                                            func_attrs_in(attrs, "Function"))};
      }), py::arg("params"), py::arg("bindings"), py::arg("ret"), py::arg("attrs") = py::dict(),
      py::arg("name") = "main",
      "A function from its parts, unchecked: aj.analysis.verify tells whether it is well formed.")
      .def_property_readonly("name", [](const NamedFunction& f) { return f.name; })
      .def_property_readonly("params", [](const NamedFunction& f) {
        py::list out;
        for (const auto& p : f.fn->params()) out.append(unconst(p));
        return out;
      })
      .def_property_readonly("bindings", [](const NamedFunction& f) { return f.fn->bindings(); })
      .def_property_readonly("ret", [](const NamedFunction& f) { return unconst(f.fn->ret()); })
      .def_property_readonly("ret_type", [](const NamedFunction& f) { return unconst(f.fn->ret_type()); })
      .def_property_readonly("attrs", [](const NamedFunction& f) { return func_attrs_out(f.fn->attrs()); })
      .def_property_readonly("frozen", [](const NamedFunction& f) {
        const AttrValue* v = f.fn->attr("frozen");
        if (v && !std::holds_alternative<std::string>(*v))
          throw VerifyError(str("function '", f.name, "': ", func_attr_problem("frozen", *v)));
        py::tuple names = py::cast(f.fn->frozen_names());
        return names;
      }, "The names the frozen attr lists (the weights training reads but does not update), in its order; "
         "() without one.")
      .def("with_attr", [](const NamedFunction& f, const py::handle& name, const py::handle& value) {
        std::string key = string_arg(name, "with_attr: name");
        return NamedFunction{f.name, f.fn->with_attr(key, func_attr_in(key, value, "with_attr"))};
      }, py::arg("name"), py::arg("value"), "A copy with attr `name` set to `value`.")
      .def("script", [](const NamedFunction& f) { return print_function(f.name, f.fn); })
      .def("__str__", [](const NamedFunction& f) { return print_function(f.name, f.fn); });

  py::class_<ModuleNode, PyModule>(m, "Module", "An ordered map from names to functions.")
      .def(py::init([](const py::handle& functions) {
        std::vector<std::pair<std::string, Function>> fns;
        for (const auto& kv : dict_arg(functions, "Module: functions")) {
          std::string name = checked_function_name(string_arg(kv.first, "Module: a function name"), "Module");
          if (!py::isinstance<NamedFunction>(kv.second))
            throw Error(str("Module: value for '", name, "' is not an aj.Function"));
          fns.emplace_back(name, kv.second.cast<NamedFunction>().fn);
        }
        return unconst(std::make_shared<const ModuleNode>(std::move(fns)));
      }), py::arg("functions") = py::dict())
      .def("__getitem__", [](const PyModule& mod, const py::handle& key) {
        std::string name = function_name_key(key, "the module");
        Function fn = mod->lookup(name);
        if (!fn) throw_function_not_found(str("module has no function '", name, "'"));
        return NamedFunction{name, fn};
      })
      .def("__contains__", [](const PyModule& mod, const py::handle& key) {
        if (!py::isinstance<py::str>(key)) return false;
        auto name = utf8_of(key);
        return name && mod->contains(*name);
      })
      .def("__len__", [](const PyModule& mod) { return mod->functions().size(); })
      .def("__iter__", [](const PyModule& mod) {
        py::list names;
        for (const auto& kv : mod->functions()) names.append(kv.first);
        return py::iter(names);
      })
      .def_property_readonly("functions", [](const PyModule& mod) {
        py::dict d;
        for (const auto& kv : mod->functions()) d[py::str(kv.first)] = NamedFunction{kv.first, kv.second};
        return d;
      }, "A dict name -> aj.Function, in module order.")
      .def("with_function", [](const PyModule& mod, const py::handle& name, const py::handle& f) {
        if (!py::isinstance<NamedFunction>(f))
          throw Error(str("with_function: expected an aj.Function, got ", py_type_name(f)));
        std::string fn_name = checked_function_name(string_arg(name, "with_function: name"), "with_function");
        return unconst(mod->with_function(fn_name, f.cast<NamedFunction>().fn));
      }, py::arg("name"), py::arg("function"), "A copy with `name` added or replaced.")
      .def("script", [](const PyModule& mod) { return print_module(mod); }, "The canonical text.")
      .def("__str__", [](const PyModule& mod) { return print_module(mod); });
}

// Appends code point c as UTF-8; surrogates and control characters but tabs as '?'.
void append_shown(std::string& out, Py_UCS4 c) {
  if ((c < 0x20 && c != '\t') || c == 0x7f || (c >= 0xD800 && c <= 0xDFFF)) {
    out += '?';
  } else if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// The text given to parse, as UTF-8. A lone surrogate (no UTF-8 form) is a
// ParseError at its line and column (in characters), as a bad character is.
std::string parse_text(const py::handle& obj) {
  if (!py::isinstance<py::str>(obj)) return string_arg<ParseError>(obj, "parse: text");
  Py_ssize_t bad = -1;
  if (auto s = utf8_of(obj, &bad)) return *std::move(s);
  auto at = [&](Py_ssize_t i) { return PyUnicode_ReadChar(obj.ptr(), i); };
  Py_ssize_t n = PyUnicode_GetLength(obj.ptr()), begin = 0;
  int line = 1;
  for (Py_ssize_t i = 0; i < bad; ++i)
    if (at(i) == '\n') ++line, begin = i + 1;
  Py_ssize_t end = begin;
  while (end < n && at(end) != '\n') ++end;
  if (end > begin && at(end - 1) == '\r') --end;
  std::string shown, caret;
  for (Py_ssize_t i = begin; i < end; ++i) append_shown(shown, at(i));
  for (Py_ssize_t i = begin; i < bad; ++i) caret += at(i) == '\t' ? '\t' : ' ';
  SourceLoc loc{line, static_cast<int>(bad - begin + 1), shown};
  throw ParseError(str(loc.line, ":", loc.column, ": unexpected character: a lone surrogate ", code_point_at(obj, bad),
                       " (no UTF-8 form)\n", shown, "\n", caret, "^"), loc);
}

void bind_text_and_analysis(py::module_& m) {
  m.def("parse", [](const py::handle& text_arg) {
    std::string text = parse_text(text_arg);
    Module mod;
    {
      py::gil_scoped_release nogil;
      mod = parse_module(text);
    }
    return unconst(mod);
  }, py::arg("text"), "Parses adjoint text into an aj.Module; aj.ParseError / aj.TypeInferenceError with line:col.");
  m.def("structural_equal", [](const py::object& a, const py::object& b) {
    return on_pair<bool>(a, b, [](const PyModule& x, const PyModule& y) { return structural_equal(Module(x), Module(y)); },
                         [](const Function& x, const Function& y) { return structural_equal(x, y); });
  }, py::arg("lhs"), py::arg("rhs"));
  m.def("structural_diff", [](const py::object& a, const py::object& b) {
    return on_pair<std::optional<std::string>>(
        a, b, [](const PyModule& x, const PyModule& y) { return structural_diff(Module(x), Module(y)); },
        [](const Function& x, const Function& y) { return structural_diff(x, y); });
  }, py::arg("lhs"), py::arg("rhs"), "None when equal, else a message naming the first difference.");
  m.def("structural_hash", [](const py::object& a) -> size_t {
    if (py::isinstance<ModuleNode>(a)) return structural_hash(Module(a.cast<PyModule>()));
    if (py::isinstance<NamedFunction>(a)) return structural_hash(a.cast<NamedFunction>().fn);
    throw Error("structural_hash needs an aj.Module or an aj.Function");
  }, py::arg("node"));
  m.def("verify_problems", [](const py::handle& mod) { return verify_problems(module_arg(mod, "verify")); },
        py::arg("mod"));
  m.def("well_formed", [](const py::handle& mod) { return well_formed(module_arg(mod, "well_formed")); },
        py::arg("mod"));
  m.def("verify", [](const py::handle& mod) { verify(module_arg(mod, "verify")); }, py::arg("mod"));
}

void bind_op_schemas(py::module_& m) {
  m.def("op_names", [] {
    std::vector<std::string> out;
    for (const OpDef* op : OpRegistry::global().all()) out.push_back(op->name);
    return out;
  }, "Every registered op, in registry order.");
  m.def("op_schema", [](const std::string& name) { return op_schema(OpRegistry::global().get(name)); },
        py::arg("name"), "An op's argument names, attrs (kind, default) and facets.");
}

}  // namespace

void bind_ir(py::module_& m) {
  bind_dims(m);
  bind_types(m);
  bind_exprs(m);
  bind_functions(m);
  bind_text_and_analysis(m);
  bind_op_schemas(m);
}

}  // namespace aj::bindings
