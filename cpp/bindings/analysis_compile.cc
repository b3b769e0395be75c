// Bindings of the compile-time analyses: computable_at_compile_time and the
// FLOP estimates. Each verifies the function it is given (as
// aj.analysis.verify would, naming the analysis) and runs with the GIL
// released. A FLOP count is an int when constant, else its canonical
// polynomial text.
#include <functional>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/analysis/compile_time.h"
#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/flops.h"
#include "adjoint/analysis/verifier.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

Function verified_function(const py::handle& obj, const std::string& user) {
  if (!py::isinstance<NamedFunction>(obj))
    throw Error(str(user, ": expected an aj.Function, got ", obj.is_none() ? "None" : py_type_name(obj)));
  const auto& f = obj.cast<const NamedFunction&>();
  py::gil_scoped_release nogil;
  verify_input(std::make_shared<ModuleNode>(std::vector<std::pair<std::string, Function>>{{f.name, f.fn}}), user);
  return f.fn;
}

// {symbol: value} from a dict of str -> non-negative int; every symbol must
// be one of the function's.
SymbolValues symbol_values(const py::handle& dims, const FunctionNode& fn, const std::string& user) {
  SymbolValues out;
  if (dims.is_none()) return out;
  if (!py::isinstance<py::dict>(dims)) throw Error(str(user, ": dims must be a dict {symbol: int}, got ", py_type_name(dims)));
  std::set<std::string> known = function_symbols(fn);
  for (const auto& kv : py::reinterpret_borrow<py::dict>(dims)) {
    std::string symbol = string_arg(kv.first, user + ": a symbol of dims");
    int64_t value = int_arg(kv.second, str(user, ": dims[\"", symbol, "\"]"));
    if (value < 0) throw Error(str(user, ": dims[\"", symbol, "\"] is ", value, ", a dim is never negative"));
    if (!known.count(symbol)) throw Error(str(user, ": dims names symbol '", symbol, "', which the function's shapes do not use"));
    out[symbol] = value;
  }
  return out;
}

// d at the given values; throws naming d and its var's name when that
// overflows int64.
Dim dim_at(const Dim& d, const SymbolValues& values, const std::string& var, const std::string& user) {
  try {
    return substitute_symbols(d, values);
  } catch (const SizeOverflowError& e) {
    throw SizeOverflowError(str(user, ": with the given dims, the dim ", d.to_string(), " of '", var,
                                "' overflows int64: ", e.what()));
  }
}

// Throws when `values` make a dim of a param or binding of fn negative
// (n - 1 at n = 0) or past int64 (n*n at n = 2**40): the counts would
// describe shapes no run can have.
void check_dims_stay_in_range(const FunctionNode& fn, const SymbolValues& values, const std::string& user) {
  if (values.empty()) return;
  std::function<void(const Type&, const std::string&)> check = [&](const Type& t, const std::string& var) {
    if (t->is_tuple()) {
      for (const Type& f : t->fields()) check(f, var);
      return;
    }
    for (const Dim& d : t->shape()) {
      if (d.is_const()) continue;
      Dim at = dim_at(d, values, var, user);
      if (at.is_const() && at.value() < 0)
        throw Error(str(user, ": with the given dims, the dim ", d.to_string(), " of '", var, "' is ", at.value(),
                        "; a dim is never negative"));
    }
  };
  for (const Var& p : fn.params()) check(p->type(), p->name_hint());
  for (const Binding& b : fn.bindings()) check(b.var->type(), b.var->name_hint());
}

py::object flops_out(const Dim& d) {
  if (d.is_const()) return py::int_(d.value());
  return py::str(d.to_string());
}

FlopCount counted(const py::handle& fn_arg, const py::handle& compile_time_free, const py::handle& dims,
                const std::string& user) {
  bool free = bool_arg(compile_time_free, user + ": compile_time_free");
  Function fn = verified_function(fn_arg, user);
  SymbolValues values = symbol_values(dims, *fn, user);
  py::gil_scoped_release nogil;
  check_dims_stay_in_range(*fn, values, user);
  return count_flops(*fn, free, values);
}

// The weights, then the vars of the computable bindings, as Python objects
// made in one walk: each var node is read once (fetched a few vars ahead),
// not once for a C++ list and again for the Python one.
py::list computable_vars(const FunctionNode& fn, const std::vector<uint8_t>& computable) {
  constexpr size_t kAhead = 8;
  const auto& bindings = fn.bindings();
  py::list out;
  for (size_t p = fn.num_input(); p < fn.params().size(); ++p) out.append(unconst(fn.params()[p]));
  for (size_t b = 0; b < bindings.size(); ++b) {
    if (b + kAhead < bindings.size() && computable[b + kAhead]) __builtin_prefetch(bindings[b + kAhead].var.get(), 1);
    if (computable[b]) out.append(unconst(bindings[b].var));
  }
  return out;
}

}  // namespace

void bind_analysis_compile(py::module_& m) {
  m.def("computable_at_compile_time", [](const py::handle& fn_arg) {
    Function fn = verified_function(fn_arg, "computable_at_compile_time");
    std::vector<uint8_t> computable;
    {
      py::gil_scoped_release nogil;
      computable = computable_bindings(DataflowIndex(*fn));
    }
    return computable_vars(*fn, computable);
  }, py::arg("fn"));
  m.def("estimate_flops", [](const py::handle& fn, const py::handle& compile_time_free, const py::handle& dims) {
    return flops_out(counted(fn, compile_time_free, dims, "estimate_flops").total);
  }, py::arg("fn"), py::arg("compile_time_free"), py::arg("dims"));
  m.def("flops_by_op", [](const py::handle& fn, const py::handle& compile_time_free, const py::handle& dims) {
    py::dict out;
    for (const auto& [op, flops] : counted(fn, compile_time_free, dims, "flops_by_op").by_op)
      out[py::str(op)] = flops_out(flops);
    return out;
  }, py::arg("fn"), py::arg("compile_time_free"), py::arg("dims"));
}

}  // namespace aj::bindings
