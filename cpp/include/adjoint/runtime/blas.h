// The CBLAS entry points adjoint uses, resolved against the linked OpenBLAS
// (the scipy-openblas32 wheel prefixes its symbols with scipy_): one GEMM
// and one strided batch of GEMMs, each overloaded for float and double, that
// every matmul, convolution and benchmark calls.
#pragma once

#include <cstdint>
#include <string>

namespace aj {
namespace blas {

// Row-major c (m, n) = op(a) (m, k) * op(b) (k, n) + beta * c. op(a) is a,
// stored (m, k) with row stride lda, or with ta its transpose, stored (k, m);
// likewise b with tb. Row strides below 1 are taken as 1 (BLAS wants >= 1
// even for empty matrices).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// `count` GEMMs c_i = op(a_i) op(b_i), as gemm with beta 0, the operands of
// the i-th at element offsets i * stride_a, i * stride_b, i * stride_c (a
// stride may be 0); runs of whole GEMMs spread over adjoint's pool, for many
// small GEMMs.
void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                        int64_t stride_c, int64_t count);
void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                        int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double* c, int64_t ldc,
                        int64_t stride_c, int64_t count);

std::string config();      // OpenBLAS build configuration string
// Threads GEMMs use: adjoint's pool splits them, OpenBLAS runs on one
// (blas.cc says why). Until set, OpenBLAS's count when it loaded
// (OPENBLAS_NUM_THREADS, else the cores).
int num_threads();
void set_num_threads(int n);

}  // namespace blas
}  // namespace aj
