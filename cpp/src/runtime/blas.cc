// Binds adjoint's BLAS calls to OpenBLAS. With the scipy-openblas32 wheel the
// cblas symbols are scipy_cblas_*; ADJOINT_BLAS_PREFIX selects the prefix.
//
// Threads: OpenBLAS runs on one thread, and a GEMM big enough is split into
// panels of C (columns, or rows when C is taller than wide), one single-
// threaded OpenBLAS call per panel (GEMV when C is one row or column), over
// adjoint's pool (runtime/parallel.h).
// OpenBLAS's own threads busy-wait: on each other inside a GEMM and for the
// next job after one, competing with the pool's threads for the cores while
// elementwise kernels run, and stalling a whole GEMM on a loaded machine when
// one of them is descheduled. Panels need no synchronization but the pool's
// join. The split depends only on the shapes and the thread count, so a run
// repeats its bits; as with OpenBLAS's own threads, another thread count may
// round differently (OpenBLAS's edge tiles sum in another order).
// aj.set_num_threads sets the pool's size; num_threads() reports it.
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

#include <algorithm>
#include <atomic>

#include "adjoint/runtime/parallel.h"

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

// The lock BLAS calls hold shared and the one change of OpenBLAS's thread
// count (at load) exclusively. Writer-preferring where glibc offers it
// (readers never nest: each holds it for one BLAS call). fork() takes it exclusively, so no GEMM runs while OpenBLAS's own
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

// OpenBLAS's thread count when the library loaded (OPENBLAS_NUM_THREADS or
// the core count), for the pool's default size; OpenBLAS itself is set to one
// thread, once, before any GEMM.
int openblas_threads_then_one();
const int g_initial_threads = openblas_threads_then_one();

// Multiply-adds a panel must hold to be worth a thread of its own: about 30 us.
constexpr int64_t kPanelGrain = int64_t{1} << 22;
// Panels are whole multiples of this many rows or columns (the micro-kernels' tiles).
constexpr int64_t kPanelUnit = 64;

// Runs c = op(a) op(b) + beta c as panels of C over the pool; call(a, b, c, m, n)
// is one single-threaded GEMM of an m x n panel with the full k.
template <typename T, typename Call>
void split_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                int64_t ldb, T* c, int64_t ldc, const Call& call) {
  bool by_columns = n >= m;
  int64_t extent = by_columns ? n : m, other = by_columns ? m : n;
  int64_t units = (extent + kPanelUnit - 1) / kPanelUnit;
  int64_t unit_work = std::max<int64_t>(1, kPanelUnit * other * k);
  int64_t grain = std::max<int64_t>(1, kPanelGrain / unit_work);
  parallel_for(units, grain, [&](int64_t first, int64_t last) {
    int64_t begin = first * kPanelUnit, end = std::min(extent, last * kPanelUnit), len = end - begin;
    if (by_columns) {
      call(a, tb ? b + begin * ldb : b + begin, c + begin, m, len);
    } else {
      call(ta ? a + begin : a + begin * lda, b, c + begin * ldc, len, n);
    }
  });
}

void gemm_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc) {
  AJ_BLAS(cblas_sgemm)(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
void gemm_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda, const double* b,
               int ldb, double beta, double* c, int ldc) {
  AJ_BLAS(cblas_dgemm)(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}
void gemv_call(CBLAS_TRANSPOSE t, int rows, int cols, const float* a, int lda, const float* x, int incx, float beta,
               float* y, int incy) {
  AJ_BLAS(cblas_sgemv)(CblasRowMajor, t, rows, cols, 1.0f, a, lda, x, incx, beta, y, incy);
}
void gemv_call(CBLAS_TRANSPOSE t, int rows, int cols, const double* a, int lda, const double* x, int incx, double beta,
               double* y, int incy) {
  AJ_BLAS(cblas_dgemv)(CblasRowMajor, t, rows, cols, 1.0, a, lda, x, incx, beta, y, incy);
}

// One panel, c = op(a) op(b) + beta c, by a single-threaded BLAS call: GEMV
// when c is one column or one row (OpenBLAS's GEMM packs a whole operand
// first, four times the time of a matrix-vector product of 512 x 512),
// else GEMM. With beta 0, c is zeroed first, so that GEMV (which scales c
// by beta) never carries a NaN of the buffer's old bytes into the result.
template <typename T>
void panel_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                   int64_t ldb, T beta, T* c, int64_t ldc) {
  Shared lock;
  if (n != 1 && m != 1) {
    gemm_call(to_cblas(ta), to_cblas(tb), as_int(m), as_int(n), as_int(k), a, as_ld(lda), b, as_ld(ldb), beta, c,
              as_ld(ldc));
    return;
  }
  int64_t len = n == 1 ? m : n, inc = n == 1 ? std::max<int64_t>(ldc, 1) : 1;
  if (beta == T(0) || k == 0)
    for (int64_t i = 0; i < len; ++i) c[i * inc] = beta == T(0) ? T(0) : beta * c[i * inc];
  if (k == 0 || len == 0) return;
  if (n == 1) {  // c (m) = op(a) (m x k) times b's one column (k)
    int64_t incx = tb ? 1 : std::max<int64_t>(ldb, 1);
    if (ta) gemv_call(CblasTrans, as_int(k), as_int(m), a, as_ld(lda), b, as_int(incx), beta, c, as_int(inc));
    else gemv_call(CblasNoTrans, as_int(m), as_int(k), a, as_ld(lda), b, as_int(incx), beta, c, as_int(inc));
  } else {  // c (n) = op(b)^T (n x k) times a's one row (k)
    int64_t incx = ta ? std::max<int64_t>(lda, 1) : 1;
    if (tb) gemv_call(CblasNoTrans, as_int(n), as_int(k), b, as_ld(ldb), a, as_int(incx), beta, c, 1);
    else gemv_call(CblasTrans, as_int(k), as_int(n), b, as_ld(ldb), a, as_int(incx), beta, c, 1);
  }
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  split_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc,
             [&](const float* pa, const float* pb, float* pc, int64_t pm, int64_t pn) {
               panel_product(ta, tb, pm, pn, k, pa, lda, pb, ldb, beta, pc, ldc);
             });
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  split_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc,
             [&](const double* pa, const double* pb, double* pc, int64_t pm, int64_t pn) {
               panel_product(ta, tb, pm, pn, k, pa, lda, pb, ldb, beta, pc, ldc);
             });
}

#ifdef ADJOINT_SCIPY_OPENBLAS
// The batch split into runs of whole GEMMs over the pool, each run one call.
template <typename T, typename Call>
void split_batch(int64_t m, int64_t n, int64_t k, const T* a, int64_t stride_a, const T* b, int64_t stride_b, T* c,
                 int64_t stride_c, int64_t count, const Call& call) {
  int64_t grain = std::max<int64_t>(1, kPanelGrain / std::max<int64_t>(1, m * n * k));
  parallel_for(count, grain, [&](int64_t first, int64_t last) {
    call(a + first * stride_a, b + first * stride_b, c + first * stride_c, last - first);
  });
}

void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  split_batch(m, n, k, a, stride_a, b, stride_b, c, stride_c, count,
              [&](const float* pa, const float* pb, float* pc, int64_t num) {
                if (m == 1 || n == 1) {  // matrix-vector products: GEMV each (see panel_product)
                  for (int64_t i = 0; i < num; ++i)
                    panel_product(ta, tb, m, n, k, pa + i * stride_a, lda, pb + i * stride_b, ldb, float(0),
                                  pc + i * stride_c, ldc);
                  return;
                }
                Shared lock;
                scipy_cblas_sgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n),
                                                as_int(k), 1.0f, pa, as_ld(lda), as_int(stride_a), pb, as_ld(ldb),
                                                as_int(stride_b), 0.0f, pc, as_ld(ldc), as_int(stride_c), as_int(num));
              });
}

void gemm_batch_strided(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                        int64_t stride_a, const double* b, int64_t ldb, int64_t stride_b, double* c, int64_t ldc,
                        int64_t stride_c, int64_t count) {
  split_batch(m, n, k, a, stride_a, b, stride_b, c, stride_c, count,
              [&](const double* pa, const double* pb, double* pc, int64_t num) {
                if (m == 1 || n == 1) {  // matrix-vector products: GEMV each (see panel_product)
                  for (int64_t i = 0; i < num; ++i)
                    panel_product(ta, tb, m, n, k, pa + i * stride_a, lda, pb + i * stride_b, ldb, double(0),
                                  pc + i * stride_c, ldc);
                  return;
                }
                Shared lock;
                scipy_cblas_dgemm_batch_strided(CblasRowMajor, to_cblas(ta), to_cblas(tb), as_int(m), as_int(n),
                                                as_int(k), 1.0, pa, as_ld(lda), as_int(stride_a), pb, as_ld(ldb),
                                                as_int(stride_b), 0.0, pc, as_ld(ldc), as_int(stride_c), as_int(num));
              });
}

std::string config() { return scipy_openblas_get_config(); }

namespace {
int openblas_threads_then_one() {
  Exclusive lock;
  int n = scipy_openblas_get_num_threads();
  scipy_openblas_set_num_threads(1);
  return n;
}
}  // namespace
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

namespace {
int openblas_threads_then_one() {
  Exclusive lock;
  int n = openblas_get_num_threads ? openblas_get_num_threads() : 1;
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  return n;
}
}  // namespace
#endif

namespace {
std::atomic<int> g_threads{0};  // 0: not set, g_initial_threads
}  // namespace

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : std::max(1, g_initial_threads);
}

void set_num_threads(int n) { g_threads.store(std::max(1, n)); }

}  // namespace blas
}  // namespace aj
