// Bindings of the runtime: BLAS information and thread control.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "adjoint/runtime/blas.h"
#include "adjoint/support/error.h"

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
  }, py::arg("n"), "Sets the number of threads OpenBLAS uses in adjoint's kernels.");
  m.def("get_num_threads", &blas::num_threads);
}

}  // namespace aj::bindings
