// Binds adjoint's BLAS calls to OpenBLAS. With the scipy-openblas32 wheel the
// cblas symbols are scipy_cblas_*; ADJOINT_BLAS_PREFIX selects the prefix.
//
// Thread safety: OpenBLAS's openblas_set_num_threads is not safe while another
// thread is inside a BLAS call. In the pthreads build (the wheel's) it writes,
// without synchronization, the thread count every GEMM reads and the server
// slots (mutex, condition variable, queue) of the threads it adds, which a
// running GEMM's scheduler scans; OpenBLAS documents no thread safety for it
// (OpenMathLib/OpenBLAS#2809), and threadpoolctl's maintainers call it a limit
// of OpenBLAS with pthreads (joblib/threadpoolctl#205, #176). So every call
// here holds a reader/writer lock shared and set_num_threads holds it
// exclusively.
#include "adjoint/runtime/blas.h"

#include <cblas.h>
#include <pthread.h>

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

CBLAS_TRANSPOSE to_cblas(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

// A size or offset as the int CBLAS takes; a row stride at least 1.
int as_int(int64_t v) { return static_cast<int>(v); }
int as_ld(int64_t v) { return static_cast<int>(v < 1 ? 1 : v); }

// The lock BLAS calls hold shared and set_num_threads exclusively. Writer-
// preferring where glibc offers it, so a stream of GEMMs from other threads
// cannot starve set_num_threads (readers never nest: each holds it for one
// BLAS call). fork() takes it exclusively, so no GEMM runs while OpenBLAS's own
// fork handler stops its threads, and the child re-initializes its copy, which
// it could otherwise never take: the parent's holders do not exist there.
pthread_rwlock_t g_lock;

void init_lock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
#ifdef __GLIBC__
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
  pthread_rwlock_init(&g_lock, &attr);
  pthread_rwlockattr_destroy(&attr);
}

const int g_lock_ready = (init_lock(), pthread_atfork([] { pthread_rwlock_wrlock(&g_lock); },
                                                      [] { pthread_rwlock_unlock(&g_lock); }, init_lock));

struct Shared {
  Shared() { pthread_rwlock_rdlock(&g_lock); }
  ~Shared() { pthread_rwlock_unlock(&g_lock); }
};

struct Exclusive {
  Exclusive() { pthread_rwlock_wrlock(&g_lock); }
  ~Exclusive() { pthread_rwlock_unlock(&g_lock); }
};

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  Shared lock;
  AJ_BLAS(cblas_sgemm)(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n), as_int(k), 1.0f, a,
                       as_ld(lda), b, as_ld(ldb), beta, c, as_ld(ldc));
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  Shared lock;
  AJ_BLAS(cblas_dgemm)(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n), as_int(k), 1.0, a,
                       as_ld(lda), b, as_ld(ldb), beta, c, as_ld(ldc));
}

#ifdef ADJOINT_SCIPY_OPENBLAS
void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  Shared lock;
  scipy_cblas_sgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n), as_int(k), 1.0f,
                                  a, as_ld(lda), as_int(stride_a), b, as_ld(ldb), as_int(stride_b), 0.0f, c,
                                  as_ld(ldc), as_int(stride_c), as_int(count));
}

void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                        int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  Shared lock;
  scipy_cblas_dgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n), as_int(k), 1.0,
                                  a, as_ld(lda), as_int(stride_a), b, as_ld(ldb), as_int(stride_b), 0.0, c,
                                  as_ld(ldc), as_int(stride_c), as_int(count));
}

std::string config() { return scipy_openblas_get_config(); }
int num_threads() {
  Shared lock;
  return scipy_openblas_get_num_threads();
}
void set_num_threads(int n) {
  Exclusive lock;
  scipy_openblas_set_num_threads(n);
}
#else
// A system CBLAS may lack the batched entry points: one GEMM per matrix.
void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    gemm(ta, tb, m, n, k, a + i * stride_a, lda, b + i * stride_b, ldb, 0.0f, c + i * stride_c, ldc);
}

void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                        int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    gemm(ta, tb, m, n, k, a + i * stride_a, lda, b + i * stride_b, ldb, 0.0, c + i * stride_c, ldc);
}

std::string config() { return openblas_get_config ? openblas_get_config() : "system CBLAS"; }
int num_threads() {
  Shared lock;
  return openblas_get_num_threads ? openblas_get_num_threads() : 1;
}
void set_num_threads(int n) {
  Exclusive lock;
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}
#endif

}  // namespace blas
}  // namespace aj
