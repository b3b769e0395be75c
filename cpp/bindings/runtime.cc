// Bindings of the runtime: the executor (aj.build, exe["name"](*arrays)),
// BLAS information and thread control. Inputs are read in place when
// contiguous, native-endian and of the param's dtype; outputs are handed to
// NumPy without copying; the GIL is released while a function runs.
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
    blas::dgemm(blas::Trans::kNo, blas::Trans::kNo, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0,
                c.mutable_data(), n);
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
  void* c = out.mutable_data();
  py::gil_scoped_release nogil;
  if (dt == "float32")
    blas::sgemm(blas::Trans::kNo, blas::Trans::kNo, m, n, k, 1.0f, static_cast<const float*>(a.data()), k,
                static_cast<const float*>(b.data()), n, 0.0f, static_cast<float*>(c), n);
  else if (dt == "float64")
    blas::dgemm(blas::Trans::kNo, blas::Trans::kNo, m, n, k, 1.0, static_cast<const double*>(a.data()), k,
                static_cast<const double*>(b.data()), n, 0.0, static_cast<double*>(c), n);
  else
    throw Error("gemm supports float32 and float64");
}

// The array for param i: the caller's own memory when it already fits.
py::array input_array(const py::handle& obj, const Var& param, size_t i, const std::string& fn_name) {
  std::string where = str("function '", fn_name, "', param '", param->name_hint(), "' (#", i, ")");
  const char* want = dtype_name(param->type()->dtype());
  py::module_ np = py::module_::import("numpy");
  py::object arr;
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    std::string got = py::str(a.dtype().attr("name"));
    if (got != want)
      throw ExecutionError(str(where, ": expected dtype ", want, ", got ", got));
    arr = a;
    if (!a.dtype().attr("isnative").cast<bool>()) arr = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
  } else {
    try {
      arr = np.attr("asarray")(obj, py::str(want));
    } catch (const py::error_already_set& e) {
      throw ExecutionError(str(where, ": cannot convert a ", py::str(py::type::of(obj).attr("__name__")).cast<std::string>(),
                               " to a ", want, " array"));
    }
  }
  return np.attr("asarray")(arr, py::arg("order") = "C");  // keeps 0-d arrays 0-d
}

NDArray view_of(const py::array& a, DType dtype) {
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  return NDArray(std::move(shape), dtype, nullptr, const_cast<void*>(a.data()));
}

py::array to_numpy(const NDArray& a) {
  auto* keep = new std::shared_ptr<void>(a.owner());
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  return py::array(py::dtype(dtype_name(a.dtype())), a.shape(), a.data(), base);
}

py::object rebuild(const Type& t, const std::vector<NDArray>& flat, size_t& pos) {
  if (t->is_tensor()) return to_numpy(flat[pos++]);
  py::tuple out(t->fields().size());
  for (size_t i = 0; i < t->fields().size(); ++i) out[i] = rebuild(t->fields()[i], flat, pos);
  return out;
}

// exe["name"]: a callable that keeps its executable alive.
struct ExecFunction {
  std::shared_ptr<Executable> exe;
  CompiledFunction* fn;

  py::object call(const py::args& args) {
    const auto& params = fn->function()->params();
    if (args.size() != params.size()) {
      std::string names;
      for (const auto& p : params) names += (names.empty() ? "" : ", ") + p->name_hint();
      throw ExecutionError(str("function '", fn->name(), "' takes ", params.size(), " input(s) (", names,
                               "), got ", args.size()));
    }
    std::vector<py::array> keep;
    std::vector<NDArray> inputs;
    for (size_t i = 0; i < params.size(); ++i) {
      keep.push_back(input_array(args[i], params[i], i, fn->name()));
      inputs.push_back(view_of(keep.back(), params[i]->type()->dtype()));
    }
    std::vector<NDArray> out;
    {
      py::gil_scoped_release nogil;
      out = fn->run(inputs);
    }
    size_t pos = 0;
    return rebuild(fn->function()->ret_type(), out, pos);
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
  m.def("set_num_threads", [](int n) {
    if (n < 1) throw Error("set_num_threads: n must be >= 1");
    blas::set_num_threads(n);
    set_parallel_threads(n);
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
      .def_property_readonly("pool_bytes", [](const ExecFunction& f) { return f.fn->pool_bytes(); })
      .def_property_readonly("peak_bytes", [](const ExecFunction& f) { return f.fn->peak_bytes(); },
                             "Peak bytes of intermediates and results alive at once in the last run.")
      .def("__repr__", [](const ExecFunction& f) { return "<aj.ExecFunction '" + f.fn->name() + "'>"; });
  py::class_<Executable, std::shared_ptr<Executable>>(m, "Executable", "Every function of a module, planned for the CPU.")
      .def(py::init([](const std::shared_ptr<ModuleNode>& mod) {
        if (!mod) throw Error("build expects an aj.Module, got None");
        return std::make_shared<Executable>(mod);
      }), py::arg("mod"))
      .def("__getitem__", [](const std::shared_ptr<Executable>& exe, const std::string& name) {
        if (!exe->module()->contains(name)) {
          py::object cls = py::module_::import("adjoint.errors").attr("FunctionNotFoundError");
          PyErr_SetObject(cls.ptr(), py::str("the executable has no function '" + name + "'").ptr());
          throw py::error_already_set();
        }
        return ExecFunction{exe, &exe->get(name)};
      })
      .def("__contains__", [](const Executable& exe, const std::string& name) { return exe.module()->contains(name); })
      .def_property_readonly("names", &Executable::names);
}

}  // namespace aj::bindings
