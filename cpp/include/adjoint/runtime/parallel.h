// A small persistent thread pool for kernels: parallel_for splits [0, n) into
// contiguous chunks run by the pool's workers and the caller. Work below
// `grain` items, or with one thread configured, runs inline. The thread count
// follows aj.set_num_threads (blas::num_threads), and GEMMs are split over
// this pool too (blas.cc), so kernels and GEMMs share one set of threads. All three functions may be called from any thread at any
// time, also while other threads are inside parallel_for; a parallel_for
// called from inside a chunk runs inline.
#pragma once

#include <cstdint>
#include <functional>

namespace aj {

// Runs fn(begin, end) over disjoint chunks covering [0, n). An exception from
// fn is rethrown here once no thread runs fn any more.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads parallel_for uses (including the caller); at least 1.
int parallel_threads();
void set_parallel_threads(int n);

}  // namespace aj
