// The private submodule _core._dim_bounds: compare() of two dims under
// bounds and the validation of a dim_bounds dict, for adjoint.dims and tests.
// Also dim_bounds_arg, the reading of a dim_bounds argument (dim_bounds.h).
#include "dim_bounds.h"

#include <pybind11/stl.h>

#include "adjoint/support/error.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

// A Dim, a dim string ("2*n + 1") or an int.
Dim dim_arg(const py::handle& obj, const std::string& what) {
  if (py::isinstance<Dim>(obj)) return obj.cast<Dim>();
  if (py::isinstance<py::str>(obj)) return Dim::parse(string_arg(obj, what));
  if (is_int_like(obj)) return Dim(to_int64(obj, what));
  throw TransformError(str(what, ": expected a Dim, a dim string or an int, got ",
                           obj.is_none() ? "None" : py_type_name(obj)));
}

DimInterval interval_arg(const py::handle& obj, const std::string& what) {
  bool pair = (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) && py::len(obj) == 2;
  if (!pair)
    throw TransformError(str(what, ": expected a pair (low, high or None), got ",
                             obj.is_none() ? "None" : py_type_name(obj)));
  py::sequence bounds = py::reinterpret_borrow<py::sequence>(obj);
  DimInterval interval;
  interval.low = int_arg<TransformError>(bounds[0], what + ": low bound");
  if (!bounds[1].is_none()) interval.high = int_arg<TransformError>(bounds[1], what + ": high bound");
  return interval;
}

py::dict bounds_to_py(const DimBounds& bounds) {
  py::dict out;
  for (const auto& [symbol, interval] : bounds.intervals())
    out[py::str(symbol)] = py::make_tuple(interval.low, interval.high ? py::object(py::int_(*interval.high)) : py::none());
  return out;
}

}  // namespace

DimBounds dim_bounds_arg(const py::handle& obj, const std::string& where) {
  DimBounds bounds;
  if (obj.is_none()) return bounds;
  if (!py::isinstance<py::dict>(obj))
    throw TransformError(str(where, ": expected a dict of symbol -> (low, high or None), got ", py_type_name(obj)));
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(obj)) {
    std::string symbol = string_arg<TransformError>(key, where + ": a symbol");
    bounds.set(symbol, interval_arg(value, str(where, ": '", escape(symbol), "'")), where);
  }
  return bounds;
}

void bind_dim_bounds(py::module_& m) {
  py::module_ sub = m.def_submodule("_dim_bounds", "Symbolic dims compared under bounds (adjoint.dims).");
  sub.def("compare", [](const py::handle& p, const py::handle& q, const py::handle& bounds) {
    DimBounds b = dim_bounds_arg(bounds, "dim_bounds");
    return std::string(ordering_name(compare(dim_arg(p, "compare: p"), dim_arg(q, "compare: q"), b)));
  }, py::arg("p"), py::arg("q"), py::arg("dim_bounds") = py::none(),
     "'==', '<=', '>=' when that holds for every dim value in the bounds, else 'unknown'.");
  sub.def("parse", [](const py::handle& bounds, const py::handle& known, const py::handle& where) {
    std::string context = string_arg<TransformError>(where, "where");
    DimBounds b = dim_bounds_arg(bounds, context);
    if (!known.is_none()) {
      if (!py::isinstance<py::list>(known) && !py::isinstance<py::tuple>(known) && !py::isinstance<py::set>(known))
        throw TransformError(str(context, ": known symbols: expected a list of str, got ", py_type_name(known)));
      std::set<std::string> symbols;
      for (const auto& s : known) symbols.insert(string_arg<TransformError>(s, context + ": a known symbol"));
      b.require_known(symbols, context);
    }
    return bounds_to_py(b);
  }, py::arg("dim_bounds"), py::arg("known") = py::none(), py::arg("where") = "dim_bounds",
     "The bounds as {symbol: (low, high or None)}; TransformError naming a bad entry.");
}

}  // namespace aj::bindings
