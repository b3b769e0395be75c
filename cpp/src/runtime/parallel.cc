// The kernels' thread pool (runtime/parallel.h). Workers sleep on a condition
// variable between jobs; a job is a function and a chunk counter the workers
// and the caller draw from. A pool created before fork() is recreated in the
// child, whose copy has no threads.
#include "adjoint/runtime/parallel.h"

#include "adjoint/runtime/blas.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace aj {
namespace {

class Pool {
 public:
  explicit Pool(int threads) : pid_(getpid()) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
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
      ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void drain() {
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) (*job_)(c);
  }
  void work() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  pid_t pid_;
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

std::mutex g_pool_mu;
int g_threads = 0;  // 0: not set yet, follow the BLAS thread count (OPENBLAS_NUM_THREADS)
Pool* g_pool = nullptr;  // leaked at exit on purpose: joining threads during static destruction can hang

int configured_threads() {
  if (g_threads == 0) g_threads = std::max(1, blas::num_threads());
  return g_threads;
}

Pool& pool() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  configured_threads();
  if (g_pool && !g_pool->owned_by_this_process()) g_pool = nullptr;  // forked child: the threads are gone
  if (!g_pool || g_pool->threads() != g_threads) {
    delete g_pool;
    g_pool = new Pool(g_threads);
  }
  return *g_pool;
}

}  // namespace

int parallel_threads() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  return configured_threads();
}

void set_parallel_threads(int n) {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_threads = std::max(1, n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  int threads = parallel_threads();
  if (n <= 0) return;
  if (threads <= 1 || n < 2 * grain) {
    fn(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, n / grain);
  int64_t step = (n + chunks - 1) / chunks;
  std::function<void(int64_t)> chunk_fn = [&](int64_t c) {
    int64_t begin = c * step, end = std::min(n, begin + step);
    if (begin < end) fn(begin, end);
  };
  pool().run(chunks, chunk_fn);
}

}  // namespace aj
