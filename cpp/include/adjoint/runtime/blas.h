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

// `count` GEMMs C_i = op(A_i) op(B_i), the operands of the i-th at element
// offsets i * stride_a, i * stride_b, i * stride_c (a stride may be 0); one
// call that OpenBLAS spreads over its threads, for many small GEMMs.
void sgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, long stride_a,
                         const float* b, int ldb, long stride_b, float* c, int ldc, long stride_c, int count);
void dgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const double* a, int lda, long stride_a,
                         const double* b, int ldb, long stride_b, double* c, int ldc, long stride_c, int count);

std::string config();      // OpenBLAS build configuration string
int num_threads();
void set_num_threads(int n);

}  // namespace blas
}  // namespace aj
