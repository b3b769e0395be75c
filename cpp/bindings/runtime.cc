// Bindings of the runtime: the executor (aj.build, exe["name"](*arrays),
// exe["name"].donating({param: output})), BLAS information and thread
// control. Inputs are read in place when contiguous, native-endian and of
// the param's dtype (and, for bool, holding only the bytes 0 and 1); outputs
// are handed to NumPy without copying; a donated input is written in place
// and returned as its aliased result; the GIL is released while a function
// runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "adjoint/runtime/blas.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/runtime/parallel.h"
#include "adjoint/support/error.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

constexpr int64_t kMaxThreads = 1024;

// One dgemm through the linked OpenBLAS: proves the library loads and links.
py::array_t<double> blas_smoke_matmul(
    py::array_t<double, py::array::c_style | py::array::forcecast> a,
    py::array_t<double, py::array::c_style | py::array::forcecast> b) {
  if (a.ndim() != 2 || b.ndim() != 2 || a.shape(1) != b.shape(0))
    throw Error("blas_smoke_matmul needs 2-D arrays (m, k) and (k, n)");
  int m = static_cast<int>(a.shape(0)), k = static_cast<int>(a.shape(1)),
      n = static_cast<int>(b.shape(1));
  py::array_t<double> c({m, n});
  {
    py::gil_scoped_release nogil;
    blas::gemm(false, false, m, n, k, a.data(), k, b.data(), n, 0.0, c.mutable_data(), n);
  }
  return c;
}

// out = a @ b through sgemm/dgemm, GIL released: the reference GEMM time.
void gemm_into(const py::array& a, const py::array& b, py::array& out) {
  auto ok = [](const py::array& x) { return x.ndim() == 2 && (x.flags() & py::array::c_style); };
  if (!ok(a) || !ok(b) || !ok(out) || a.shape(1) != b.shape(0) || out.shape(0) != a.shape(0) ||
      out.shape(1) != b.shape(1) || !out.writeable())
    throw Error("gemm needs C-contiguous 2-D arrays a (m, k), b (k, n) and a writable out (m, n)");
  int m = static_cast<int>(a.shape(0)), k = static_cast<int>(a.shape(1)), n = static_cast<int>(b.shape(1));
  std::string dt = py::str(a.dtype().attr("name"));
  if (dt != py::str(b.dtype().attr("name")).cast<std::string>() || dt != py::str(out.dtype().attr("name")).cast<std::string>())
    throw Error("gemm needs a, b and out of one dtype");
  if (dt != "float32" && dt != "float64") throw Error("gemm supports float32 and float64");
  void* c = out.mutable_data();
  auto run = [&](auto zero) {
    using T = decltype(zero);
    blas::gemm(false, false, m, n, k, static_cast<const T*>(a.data()), k, static_cast<const T*>(b.data()), n, zero,
               static_cast<T*>(c), n);
  };
  py::gil_scoped_release nogil;
  if (dt == "float32") run(0.0f);
  else run(0.0);
}

// "(n, 784) float32"; a tuple as "((n, 10) float32, () float32)".
std::string type_text(const Type& t) {
  if (!t->is_tensor()) {
    std::string out = "(";
    for (size_t i = 0; i < t->fields().size(); ++i) out += (i ? ", " : "") + type_text(t->fields()[i]);
    return out + (t->fields().size() == 1 ? ",)" : ")");
  }
  std::string out = "(";
  const Shape& shape = t->shape();
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].to_string();
  return out + (shape.size() == 1 ? ",) " : ") ") + dtype_name(t->dtype());
}

// "main(x: (n, 784) float32, w: (784, 10) float32) -> (n, 10) float32"
std::string signature_text(const std::string& name, const FunctionNode& fn) {
  std::string out = name + "(";
  for (size_t i = 0; i < fn.params().size(); ++i)
    out += (i ? ", " : "") + fn.params()[i]->name_hint() + ": " + type_text(fn.params()[i]->type());
  return out + ") -> " + type_text(fn.ret_type());
}

// The first line of a message (a NumPy error may carry a traceback after it).
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Whether the executor can read a NumPy array in place: C-contiguous,
// aligned for its dtype and in the machine's byte order.
bool ready_as_is(const py::array& a) {
  constexpr int kAligned = 0x0100;  // NPY_ARRAY_ALIGNED
  char order = a.dtype().byteorder();
  static const char native = [] {
    uint16_t one = 1;
    return *reinterpret_cast<const char*>(&one) == 1 ? '<' : '>';
  }();
  return (a.flags() & py::array::c_style) && (a.flags() & kAligned) && (order == '=' || order == '|' || order == native);
}

// Whether obj is an ndarray the executor reads in place with no further
// check: of exactly the param's dtype object (NumPy's builtin native dtypes
// are singletons), C-contiguous and aligned. The per-call fast path; any
// other input goes through input_array.
bool usable_in_place(const py::handle& obj, DType want) {
  constexpr int kAligned = 0x0100;  // NPY_ARRAY_ALIGNED
  if (!py::isinstance<py::array>(obj)) return false;
  auto a = py::reinterpret_borrow<py::array>(obj);
  int flags = a.flags();
  return (flags & py::array::c_style) && (flags & kAligned) && a.dtype().ptr() == numpy_dtype(want).ptr();
}

// Whether obj is an ndarray of the param's dtype that input_array would copy
// (not C-contiguous, unaligned or byte-swapped): such a copy is made only
// after the shapes are checked, so a wrong-shaped view of a huge logical size
// (zero strides) is refused without copying it.
bool copy_needed(const py::handle& obj, const Var& param) {
  if (!py::isinstance<py::array>(obj)) return false;
  auto a = py::reinterpret_borrow<py::array>(obj);
  return py::str(a.dtype().attr("name")).cast<std::string>() == dtype_name(param->type()->dtype()) && !ready_as_is(a);
}

// The array for param i: the caller's own memory when it is already
// C-contiguous, aligned, native-endian and of the param's dtype; else a copy
// that is. A NumPy array of another dtype is an error (no silent casts); any
// other value (a scalar, nested lists, an object with __array__) is read as
// NumPy reads it and cast to the param's dtype when that changes no value
// (adjoint/_casts.py: 2.5 or 2**40 into int32, 2 into bool, 1e40 into
// float32 are errors).
py::array input_array(const py::handle& obj, const Var& param, size_t i, const std::string& fn_name) {
  auto where = [&] { return str("function '", fn_name, "', param '", param->name_hint(), "' (#", i, ")"); };
  const char* want = dtype_name(param->type()->dtype());
  if (obj.is_none()) throw ExecutionError(str(where(), ": expected a ", want, " array, got None"));
  bool is_array = py::isinstance<py::array>(obj);
  if (is_array) {
    auto a = py::reinterpret_borrow<py::array>(obj);
    std::string got = py::str(a.dtype().attr("name"));
    if (got != want) throw ExecutionError(str(where(), ": expected dtype ", want, ", got ", got));
    if (ready_as_is(a)) return a;
  }
  auto what = [&] {
    return str(where(), ": cannot convert a ", py_type_name(obj), " to a C-contiguous ", want, " array");
  };
  py::object out;
  try {
    // require() keeps 0-d arrays 0-d and copies only what is not C-contiguous
    // and aligned; the dtype given is native-endian.
    out = numpy_call<ExecutionError>(what, [&] {
      if (is_array) return py::module_::import("numpy").attr("require")(obj, py::str(want), "CA");
      return py::module_::import("adjoint._casts").attr("param_array")(obj, py::str(want));
    });
  } catch (const ExecutionError& e) {
    throw ExecutionError(first_line(e.what()));
  }
  if (py::isinstance<py::str>(out)) throw ExecutionError(str(what(), ": ", out.cast<std::string>()));
  return out.cast<py::array>();
}

NDArray view_of(const py::array& a, DType dtype) {
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  return NDArray(std::move(shape), dtype, nullptr, const_cast<void*>(a.data()));
}

// The result as the type nests it; flat tensor k is `given[k]` when set (a
// donated input's array).
// A result NumPy cannot make (more than its 64 dims) is an ExecutionError
// naming the function and the result.
py::object rebuild(const Type& t, const std::vector<NDArray>& flat, const std::vector<py::object>& given, size_t& pos,
                   const std::string& fn_name) {
  if (t->is_tensor()) {
    size_t k = pos++;
    if (given[k]) return given[k];
    try {
      return ndarray_to_py(flat[k], /*writeable=*/true);
    } catch (const SizeOverflowError& e) {
      throw ExecutionError(str("function '", fn_name, "', result ", k, ": ", e.what()));
    }
  }
  py::tuple out(t->fields().size());
  for (size_t i = 0; i < t->fields().size(); ++i) out[i] = rebuild(t->fields()[i], flat, given, pos, fn_name);
  return out;
}

// The bytes an array spans, [first, last), empty for an empty array.
std::pair<const char*, const char*> byte_range(const py::array& a) {
  if (a.size() == 0) return {nullptr, nullptr};
  const char* base = static_cast<const char*>(a.data());
  ptrdiff_t lo = 0, hi = 0;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    ptrdiff_t extent = static_cast<ptrdiff_t>(a.shape(d) - 1) * a.strides(d);
    (extent < 0 ? lo : hi) += extent;
  }
  return {base + lo, base + hi + a.itemsize()};
}

bool overlap(const py::array& a, const py::array& b) {
  auto [a0, a1] = byte_range(a);
  auto [b0, b1] = byte_range(b);
  return a0 && b0 && a0 < b1 && b0 < a1;
}

// "main, main_adjoint"
std::string function_list(const Executable& exe) {
  std::string out;
  for (const auto& name : exe.names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// exe["name"]: a callable that keeps its executable alive.
struct ExecFunction {
  std::shared_ptr<Executable> exe;
  CompiledFunction* fn;
  std::shared_ptr<CompiledFunction> donating_fn;  // owns fn when planned with aliases

  std::string param_text(size_t i) const {
    return str("function '", fn->name(), "', param '", fn->function()->params()[i]->name_hint(), "' (#", i, ")");
  }

  std::string signature() const { return signature_text(fn->name(), *fn->function()); }

  // The inputs in param order, from positional arguments and keyword
  // arguments named by param name hints, bound as Python binds a call.
  std::vector<py::object> arguments(const py::args& args, const py::kwargs& kwargs) const {
    const auto& params = fn->function()->params();
    auto fail = [&](const std::string& why) { throw ExecutionError(str("function '", fn->name(), "' ", why, "; its signature: ", signature())); };
    if (args.size() > params.size())
      fail(str("takes ", params.size(), " argument(s), got ", args.size(), " positional"));
    std::vector<py::object> given(params.size());
    for (size_t i = 0; i < args.size(); ++i) given[i] = args[i];
    for (const auto& kv : kwargs) {
      auto utf8 = utf8_of(kv.first);  // a name with a lone surrogate is no param's
      std::string key = utf8 ? *utf8 : printable_str(kv.first);
      size_t found = params.size(), count = 0;
      for (size_t i = 0; i < params.size(); ++i)
        if (utf8 && params[i]->name_hint() == key) found = i, ++count;
      if (count == 0) fail(str("has no param named '", key, "'"));
      if (count > 1) fail(str("has several params named '", key, "': pass them by position"));
      if (given[found]) fail(str("got two values for '", key, "' (#", found, ")"));
      given[found] = py::reinterpret_borrow<py::object>(kv.second);
    }
    std::string missing;
    for (size_t i = 0; i < params.size(); ++i)
      if (!given[i]) missing += str(missing.empty() ? "" : ", ", "'", params[i]->name_hint(), "' (#", i, ")");
    if (!missing.empty()) fail("is missing " + missing);
    return given;
  }

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    const auto& params = fn->function()->params();
    std::vector<py::object> given = arguments(args, kwargs);
    for (const Alias& a : fn->aliases()) check_donated(given[a.param], a.param);
    std::vector<py::array> keep(params.size());
    std::vector<NDArray> inputs(params.size());
    std::vector<size_t> copy_later;  // strided or byte-swapped arrays: stand-ins with their shapes first
    for (size_t i = 0; i < params.size(); ++i) {
      if (usable_in_place(given[i], params[i]->type()->dtype())) {
        keep[i] = py::reinterpret_borrow<py::array>(given[i]);
      } else if (copy_needed(given[i], params[i])) {
        keep[i] = py::reinterpret_borrow<py::array>(given[i]);
        copy_later.push_back(i);
      } else {
        keep[i] = input_array(given[i], params[i], i, fn->name());
      }
      inputs[i] = view_of(keep[i], params[i]->type()->dtype());
    }
    if (!copy_later.empty()) {
      fn->bind_symbols(inputs);  // reads shapes only: refuses wrong shapes before anything is copied
      for (size_t i : copy_later) {
        keep[i] = input_array(given[i], params[i], i, fn->name());
        inputs[i] = view_of(keep[i], params[i]->type()->dtype());
      }
    }
    for (const Alias& a : fn->aliases()) check_not_shared(given, keep, a.param);
    canonical_bool_inputs(keep, inputs);
    std::vector<NDArray> out;
    {
      py::gil_scoped_release nogil;
      out = fn->run(inputs);
    }
    std::vector<py::object> same(out.size());
    for (const Alias& a : fn->aliases()) same[a.output] = given[a.param];
    size_t pos = 0;
    return rebuild(fn->function()->ret_type(), out, same, pos, fn->name());
  }

  // Bool inputs with bytes other than 0 and 1 (NumPy reads any nonzero byte
  // as True) made canonical, as the kernels read them (ir/ndarray.h): a
  // donated array in place (its memory is the executor's to write), any other
  // as a copy, so the caller's array is left as it was.
  void canonical_bool_inputs(std::vector<py::array>& keep, std::vector<NDArray>& inputs) const {
    const auto& params = fn->function()->params();
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->type()->dtype() != DType::kBool || canonical_bools(inputs[i].data(), inputs[i].numel())) continue;
      if (!donated(i)) {
        std::vector<py::ssize_t> shape(keep[i].shape(), keep[i].shape() + keep[i].ndim());
        keep[i] = py::array(numpy_dtype(DType::kBool), shape, keep[i].data());  // a copy: no base is given
        inputs[i] = view_of(keep[i], DType::kBool);
      }
      make_canonical_bools(inputs[i].data(), inputs[i].numel());
    }
  }

  bool donated(size_t param) const {
    for (const Alias& a : fn->aliases())
      if (a.param == param) return true;
    return false;
  }

  // A donated argument is written in place, so it must be a NumPy array the
  // executor can write as it is: of the param's dtype, writable,
  // C-contiguous, aligned and native-endian (no converting copy).
  void check_donated(const py::handle& obj, size_t i) const {
    const char* want = dtype_name(fn->function()->params()[i]->type()->dtype());
    auto fail = [&](const std::string& why) { throw ExecutionError(str(param_text(i), " is donated: ", why)); };
    if (!py::isinstance<py::array>(obj))
      fail(str("expected a writable ", want, " NumPy array (the result is written into it), got ",
               obj.is_none() ? "None" : py_type_name(obj)));
    auto a = py::reinterpret_borrow<py::array>(obj);
    std::string got = py::str(a.dtype().attr("name"));
    if (got != want) fail(str("expected dtype ", want, " (a donated array is not converted), got ", got));
    if (!a.writeable()) fail("the array is read-only");
    if (!(a.flags() & py::array::c_style)) fail("the array is not C-contiguous (a donated array is not copied)");
    if (!ready_as_is(a)) fail("the array is unaligned or byte-swapped (a donated array is not copied)");
  }

  // No other argument may share a donated argument's bytes: neither as given
  // nor as read (a view converted by NumPy may still be the same memory).
  void check_not_shared(const std::vector<py::object>& given, const std::vector<py::array>& keep, size_t i) const {
    const py::array& donated = keep[i];
    for (size_t j = 0; j < keep.size(); ++j) {
      if (j == i) continue;
      bool shared = overlap(donated, keep[j]) ||
                    (py::isinstance<py::array>(given[j]) && overlap(donated, py::reinterpret_borrow<py::array>(given[j])));
      if (shared)
        throw ExecutionError(str(param_text(i), " is donated, so no other argument may share its memory, but ",
                                 "param '", fn->function()->params()[j]->name_hint(), "' (#", j, ") does"));
    }
  }

  // exe["f"].donating({param: output}): a param index or name to a flat
  // result index; planned anew (the executable's own plan is unchanged).
  ExecFunction donating(const py::handle& mapping) const {
    std::string what = str("function '", fn->name(), "': cannot donate");
    if (!py::isinstance(mapping, py::module_::import("collections.abc").attr("Mapping")))
      throw ExecutionError(str(what, ": expected a dict {param index or name: result index}, got ",
                               py_type_name(mapping)));
    // dict() reads any Mapping through its keys and items, whatever its
    // items() yields (a custom Mapping's may give no (key, value) pairs).
    py::dict entries;
    try {
      entries = py::dict(py::reinterpret_borrow<py::object>(mapping));
    } catch (py::error_already_set& e) {
      throw ExecutionError(str(what, ": cannot read the dict given: ", first_line(e.what())));
    }
    std::vector<Alias> aliases;
    for (const auto& [key, value] : entries) {
      size_t param = param_index(key, what);
      std::string result_of = str(what, ": the result index for param '",
                                  fn->function()->params()[param]->name_hint(), "' (#", param, ")");
      int64_t output = int_arg<ExecutionError>(value, result_of);
      if (output < 0) throw ExecutionError(str(result_of, " must be >= 0, got ", output));
      aliases.push_back({param, static_cast<size_t>(output)});
    }
    std::shared_ptr<CompiledFunction> planned;
    {
      py::gil_scoped_release nogil;
      planned = exe->donating(fn->name(), std::move(aliases));
    }
    return ExecFunction{exe, planned.get(), planned};
  }

  size_t param_index(const py::handle& key, const std::string& what) const {
    const auto& params = fn->function()->params();
    if (py::isinstance<py::str>(key)) {
      std::string name = string_arg<ExecutionError>(key, what);
      size_t found = params.size(), count = 0;
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i]->name_hint() == name) found = i, ++count;
      if (count == 0) throw ExecutionError(str(what, ": the function has no param named '", name, "'"));
      if (count > 1) throw ExecutionError(str(what, ": the function has several params named '", name, "': give the index"));
      return found;
    }
    if (!is_int_like(key))
      throw ExecutionError(str(what, ": a key must be a param index or name, got ", key.is_none() ? "None" : py_type_name(key)));
    int64_t i = int_arg<ExecutionError>(key, what);
    if (i < 0 || static_cast<size_t>(i) >= params.size())
      throw ExecutionError(str(what, ": param index ", i, " is out of range: the function has ", params.size(),
                               " param(s)"));
    return static_cast<size_t>(i);
  }
};

}  // namespace

void bind_runtime(py::module_& m) {
  m.def("blas_info", [] {
    py::dict d;
    d["config"] = blas::config();
    d["num_threads"] = blas::num_threads();
#ifdef ADJOINT_SCIPY_OPENBLAS
    d["provider"] = "scipy-openblas32";
#else
    d["provider"] = "system";
#endif
    return d;
  }, "The linked BLAS: provider, OpenBLAS config string, thread count.");
  m.def("blas_smoke_matmul", &blas_smoke_matmul, py::arg("a"), py::arg("b"),
        "a @ b for float64 matrices, through the linked OpenBLAS dgemm.");
  m.def("set_num_threads", [](const py::handle& arg) {
    int64_t n = int_arg(arg, "set_num_threads: n");
    if (n < 1 || n > kMaxThreads) throw Error(str("set_num_threads: n must be from 1 to ", kMaxThreads, ", got ", n));
    blas::set_num_threads(static_cast<int>(n));
    set_parallel_threads(static_cast<int>(n));
  }, py::arg("n"), "Sets how many threads adjoint's GEMMs (OpenBLAS) and other kernels use.");
  m.def("get_num_threads", &blas::num_threads);
  m.def("gemm", &gemm_into, py::arg("a"), py::arg("b"), py::arg("out"),
        "out = a @ b for C-contiguous 2-D float32/float64 arrays, straight through OpenBLAS "
        "(no checks beyond shapes and dtypes; for benchmarks).");

  py::class_<ExecFunction>(m, "ExecFunction", "A compiled function: call it with NumPy arrays.")
      .def("__call__", &ExecFunction::call)
      .def_property_readonly("name", [](const ExecFunction& f) { return f.fn->name(); })
      .def_property_readonly("num_instructions", [](const ExecFunction& f) { return f.fn->num_instructions(); })
      .def_property_readonly("num_folded_transposes", [](const ExecFunction& f) { return f.fn->num_folded_transposes(); })
      .def_property_readonly("num_fused_groups", [](const ExecFunction& f) { return f.fn->num_fused_groups(); },
                             "Fused instructions, each a group of elementwise ops run in one pass.")
      .def_property_readonly("num_fused_ops", [](const ExecFunction& f) { return f.fn->num_fused_ops(); },
                             "Elementwise ops that run inside fused instructions.")
      .def_property_readonly("fused_programs", [](const ExecFunction& f) { return f.fn->fused_programs(); },
                             "Each fused instruction as (program, compiled): its ops as text, and the name of "
                             "the compiled program running it, or '' when the block interpreter does.")
      // The run stats wait for a run on another thread, with the GIL released.
      .def_property_readonly("pool_bytes", [](const ExecFunction& f) {
        py::gil_scoped_release nogil;
        return f.fn->pool_bytes();
      })
      .def_property_readonly("peak_bytes", [](const ExecFunction& f) {
        py::gil_scoped_release nogil;
        return f.fn->peak_bytes();
      },
                             "Peak bytes of intermediates and results alive at once in the last run.")
      .def_property_readonly("function", [](const ExecFunction& f) { return NamedFunction{f.fn->name(), f.fn->function()}; },
                             "The aj.Function this was compiled from.")
      .def_property_readonly("_signature_text", &ExecFunction::signature)
      .def("donating", &ExecFunction::donating, py::arg("aliases"),
           "This function planned anew with donated inputs: {param index or name: flat result index}.")
      .def_property_readonly("_aliases", [](const ExecFunction& f) {
        py::list out;
        for (const Alias& a : f.fn->aliases()) out.append(py::make_tuple(a.param, a.output, a.direct));
        return out;
      })
      .def_property_readonly("_last_run_stats", [](const ExecFunction& f) {
        RunStats s;
        {
          py::gil_scoped_release nogil;
          s = f.fn->last_run_stats();
        }
        return py::make_tuple(s.allocations, s.allocated_bytes, s.copied_bytes);
      })
      .def("__repr__", [](const ExecFunction& f) { return "<ExecFunction " + f.signature() + ">"; });
  py::class_<Executable, std::shared_ptr<Executable>>(m, "Executable", "Every function of a module, planned for the CPU.")
      .def(py::init([](const py::handle& arg, const py::handle& fuse_arg) {
        Module mod = verified_module(arg, "build");
        if (!py::isinstance<py::bool_>(fuse_arg) && !py::isinstance(fuse_arg, numpy_attr(NumpyAttr::kBool)))
          throw Error(str("build: fuse must be True or False, got ", fuse_arg.is_none() ? "None" : py_type_name(fuse_arg)));
        bool fuse = fuse_arg.cast<bool>();
        py::gil_scoped_release nogil;
        return std::make_shared<Executable>(mod, fuse);
      }), py::arg("mod"), py::arg("fuse") = true)
      .def("__getitem__", [](const std::shared_ptr<Executable>& exe, const py::handle& key) {
        std::string name = function_name_key(key, "the executable");
        if (!exe->module()->contains(name)) throw_function_not_found(str("the executable has no function '", name, "'"));
        return ExecFunction{exe, &exe->get(name), nullptr};
      })
      .def("__contains__", [](const Executable& exe, const py::handle& key) {
        if (!py::isinstance<py::str>(key)) return false;
        auto name = utf8_of(key);
        return name && exe.module()->contains(*name);
      })
      .def_property_readonly("names", &Executable::names)
      .def("__getattr__", [](const std::shared_ptr<Executable>& exe, const py::handle& key) {
        // An AttributeError for any name no function has (also one with a
        // lone surrogate, no function's), so hasattr and getattr(x, n, d) work.
        auto name = py::isinstance<py::str>(key) ? utf8_of(key) : std::nullopt;
        if (!name || !exe->module()->contains(*name))
          throw py::attribute_error(str("aj.Executable has no attribute or function '",
                                        py::isinstance<py::str>(key) ? printable_str(key) : py_type_name(key),
                                        "'; its functions: ", function_list(*exe)));
        return ExecFunction{exe, &exe->get(*name), nullptr};
      })
      .def("__dir__", [](const py::object& self) {
        py::list out = py::module_::import("builtins").attr("object").attr("__dir__")(self);
        for (const auto& name : self.cast<const Executable&>().names())
          if (py::str(name).attr("isidentifier")().cast<bool>()) out.append(py::str(name));
        return out;
      })
      .def("__repr__", [](Executable& exe) {
        std::string out = str("<aj.Executable with ", exe.names().size(), " function(s):");
        for (const auto& name : exe.names()) out += "\n  " + signature_text(name, *exe.get(name).function());
        return out + ">";
      });
}

}  // namespace aj::bindings
