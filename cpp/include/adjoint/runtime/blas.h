// The CBLAS entry points adjoint uses, resolved against the linked OpenBLAS
// (the scipy-openblas32 wheel prefixes its symbols with scipy_).
#pragma once

#include <string>

namespace aj {
namespace blas {

enum class Trans { kNo, kYes };

// Row-major C = alpha * op(A) * op(B) + beta * C.
void sgemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
void dgemm(Trans ta, Trans tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc);

std::string config();      // OpenBLAS build configuration string
int num_threads();
void set_num_threads(int n);

}  // namespace blas
}  // namespace aj
