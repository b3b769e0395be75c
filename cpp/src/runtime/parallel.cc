// The kernels' thread pool (runtime/parallel.h). A job is a function and a
// chunk counter the workers and the caller draw from. Between jobs a worker
// spins for up to kSpin, then sleeps on a condition variable; the caller
// likewise spins for the workers' last chunks before sleeping. The executor
// starts jobs microseconds apart (a GEMM's panels, then a fused group, ...)
// and a sleeping thread takes tens of microseconds to wake, more on a
// virtual machine, so without the spin each job would start a thread short.
// The spin is bounded so that an idle pool leaves the cores to others.
//
// Thread safety: the thread count may change at any time, from any thread,
// while other threads run jobs. The current pool is held by a shared_ptr; a
// job keeps the pool it started on alive, and a pool replaced by one of a new
// size is destroyed (its workers joined) by its last user, outside any lock.
// A pool created before fork() is abandoned in the child, whose copy has no
// threads and may hold locks taken by them: it is never destroyed there.
// A parallel_for inside a job (from a worker or the caller) runs inline, so
// nesting cannot wait on the pool it runs on. An exception from a chunk is
// rethrown to the caller once every worker has left the job.
#include "adjoint/runtime/parallel.h"

#include "adjoint/runtime/blas.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace aj {
namespace {

thread_local bool t_in_job = false;  // this thread is running chunks of a job

constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls ready() for up to kSpin; whether it became true.
template <class Ready>
bool spin_until(Ready&& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (uint32_t i = 1;; ++i) {
    if (ready()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    cpu_relax();
  }
}

class Pool {
 public:
  // Starts threads - 1 workers; when the system refuses a thread, runs with
  // the workers it has (the caller always takes part).
  explicit Pool(int threads) : size_(threads), pid_(getpid()) {
    try {
      for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return size_; }  // the thread count it was made for
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  bool owned_by_this_process() const { return pid_ == getpid(); }

  void run(int64_t chunks, const std::function<void(int64_t)>& chunk_fn) {
    std::lock_guard<std::mutex> serial(run_mu_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &chunk_fn;
      chunks_ = chunks;
      next_.store(0);
      pending_ = static_cast<int>(workers_.size());
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    drain();
    spin_until([this] { return pending_.load() == 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_.load() == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  // Runs chunks until none is left; the first exception stops the job.
  void drain() {
    t_in_job = true;
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
      try {
        (*job_)(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
        next_.store(chunks_);
      }
    }
    t_in_job = false;
  }
  void work() {
    uint64_t seen = 0;
    while (true) {
      spin_until([&] { return stop_.load() || generation_.load() != seen; });
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  int size_;
  pid_t pid_;
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  // Changed under mu_, read by the spins without it.
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

std::atomic<int> g_threads{0};  // 0: not set yet, follow the BLAS thread count (OPENBLAS_NUM_THREADS)

// The current pool; the holder is leaked at exit on purpose: joining threads
// during static destruction can hang.
std::mutex g_pool_mu;
std::shared_ptr<Pool>* const g_pool = new std::shared_ptr<Pool>();

// fork() while another thread holds g_pool_mu would leave it locked in the child.
const int g_pool_mu_atfork = pthread_atfork([] { g_pool_mu.lock(); }, [] { g_pool_mu.unlock(); },
                                            [] { g_pool_mu.unlock(); });

std::shared_ptr<Pool> make_pool(int threads) {
  return std::shared_ptr<Pool>(new Pool(threads), [](Pool* p) {
    if (p->owned_by_this_process()) delete p;  // else: a parent's pool in a forked child, left alone
  });
}

// The pool for `threads` threads, or null for one thread. A pool of another
// size, or of the parent process, is retired: released after the lock, so
// joining its workers (when this was its last user) blocks no other thread.
std::shared_ptr<Pool> current_pool(int threads) {
  std::shared_ptr<Pool> retired;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  std::shared_ptr<Pool>& pool = *g_pool;
  if (pool && (!pool->owned_by_this_process() || pool->size() != threads)) retired = std::move(pool);
  if (threads > 1 && !pool) pool = make_pool(threads);
  return pool;
}

}  // namespace

int parallel_threads() {
  int n = g_threads.load();
  if (n == 0) {
    g_threads.compare_exchange_strong(n, std::max(1, blas::num_threads()));
    n = g_threads.load();
  }
  return n;
}

void set_parallel_threads(int n) { g_threads.store(std::max(1, n)); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  std::shared_ptr<Pool> pool;
  if (!t_in_job && n >= 2 * grain) pool = current_pool(parallel_threads());
  if (!pool) {
    fn(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(pool->threads(), n / grain);
  int64_t step = (n + chunks - 1) / chunks;
  std::function<void(int64_t)> chunk_fn = [&](int64_t c) {
    int64_t begin = c * step, end = std::min(n, begin + step);
    if (begin < end) fn(begin, end);
  };
  pool->run(chunks, chunk_fn);
}

}  // namespace aj
