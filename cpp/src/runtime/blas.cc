// Binds adjoint's BLAS calls to OpenBLAS. With the scipy-openblas32 wheel the
// cblas symbols are scipy_cblas_*; ADJOINT_BLAS_PREFIX selects the prefix.
#include "adjoint/runtime/blas.h"

#include <cblas.h>

#define AJ_CAT2(a, b) a##b
#define AJ_CAT(a, b) AJ_CAT2(a, b)
#ifdef ADJOINT_SCIPY_OPENBLAS
// The wheel's cblas.h declares the prefixed names.
#define AJ_BLAS(name) AJ_CAT(scipy_, name)
#else
#define AJ_BLAS(name) name
extern "C" {
char* openblas_get_config(void) __attribute__((weak));
int openblas_get_num_threads(void) __attribute__((weak));
void openblas_set_num_threads(int) __attribute__((weak));
}
#endif

namespace aj {
namespace blas {

namespace {
CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }
}  // namespace

void sgemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  AJ_BLAS(cblas_sgemm)(CblasRowMajor, to_cblas(ta), to_cblas(tb), m, n, k, alpha, a, lda, b, ldb,
                       beta, c, ldc);
}

void dgemm(Trans ta, Trans tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
  AJ_BLAS(cblas_dgemm)(CblasRowMajor, to_cblas(ta), to_cblas(tb), m, n, k, alpha, a, lda, b, ldb,
                       beta, c, ldc);
}

#ifdef ADJOINT_SCIPY_OPENBLAS
void sgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, long stride_a,
                         const float* b, int ldb, long stride_b, float* c, int ldc, long stride_c, int count) {
  scipy_cblas_sgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), m, n, k, 1.0f, a, lda, static_cast<int>(stride_a),
                                  b, ldb, static_cast<int>(stride_b), 0.0f, c, ldc, static_cast<int>(stride_c), count);
}

void dgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const double* a, int lda, long stride_a,
                         const double* b, int ldb, long stride_b, double* c, int ldc, long stride_c, int count) {
  scipy_cblas_dgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), m, n, k, 1.0, a, lda, static_cast<int>(stride_a),
                                  b, ldb, static_cast<int>(stride_b), 0.0, c, ldc, static_cast<int>(stride_c), count);
}

std::string config() { return scipy_openblas_get_config(); }
int num_threads() { return scipy_openblas_get_num_threads(); }
void set_num_threads(int n) { scipy_openblas_set_num_threads(n); }
#else
// A system CBLAS may lack the batched entry points: one GEMM per matrix.
void sgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, long stride_a,
                         const float* b, int ldb, long stride_b, float* c, int ldc, long stride_c, int count) {
  for (int i = 0; i < count; ++i)
    sgemm(ta, tb, m, n, k, 1.0f, a + i * stride_a, lda, b + i * stride_b, ldb, 0.0f, c + i * stride_c, ldc);
}

void dgemm_batch_strided(Trans ta, Trans tb, int m, int n, int k, const double* a, int lda, long stride_a,
                         const double* b, int ldb, long stride_b, double* c, int ldc, long stride_c, int count) {
  for (int i = 0; i < count; ++i)
    dgemm(ta, tb, m, n, k, 1.0, a + i * stride_a, lda, b + i * stride_b, ldb, 0.0, c + i * stride_c, ldc);
}

std::string config() { return openblas_get_config ? openblas_get_config() : "system CBLAS"; }
int num_threads() { return openblas_get_num_threads ? openblas_get_num_threads() : 1; }
void set_num_threads(int n) {
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}
#endif

}  // namespace blas
}  // namespace aj
