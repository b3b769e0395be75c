// Running a fused group (fusion.h): the group's elements are split into
// blocks of its block_length, blocks are split over the thread pool, and each
// thread runs every step on a block before moving to the next, keeping the
// intermediates in per-thread scratch blocks that stay in cache. Each element
// goes through the same functors in the same order as unfused, so the bits
// agree.
#include <algorithm>
#include <cstring>
#include <new>

#include "fusion.h"

namespace aj {
namespace {

// How an input is read in this run.
enum class InputMode { kFull, kScalar, kTiled };

// The scratch a thread runs blocks of a group in, and their length. Per
// thread it is grown to the largest group run on the thread and kept for
// the next run (no allocation per run), up to kFusedScratchBudget; a group
// wider than that gets scratch of its own for the run, freed after it.
// Where that memory cannot be had, the blocks shrink to fit `fallback`
// (kFallbackScratchBytes on the thread's stack), so a group of at most
// kMaxFallbackScratch scratch blocks never fails for memory: donated inputs
// are written in place only where nothing after can fail (donation.cc).
class Scratch {
 public:
  Scratch(const FusedGroup& group, char* fallback) : block_(group.block_length) {
    size_t words = static_cast<size_t>(group.num_scratch) * static_cast<size_t>(block_);
    if (words == 0) return;
    thread_local std::vector<double> kept;
    std::vector<double>& scratch = words * sizeof(double) <= static_cast<size_t>(kFusedScratchBudget) ? kept : own_;
    try {
      if (scratch.size() < words) scratch.resize(words);
      data_ = reinterpret_cast<char*>(scratch.data());
    } catch (const std::bad_alloc&) {
      if (group.num_scratch > kMaxFallbackScratch) throw;
      block_ = std::min<int64_t>(block_, kMaxFallbackScratch / group.num_scratch);
      data_ = fallback;
    }
  }
  char* data() const { return data_; }
  int64_t block_length() const { return block_; }

 private:
  std::vector<double> own_;
  int64_t block_;
  char* data_ = nullptr;
};

// dst[0, len) = the elements [start, start + len) of src repeated with period `period`.
void gather_tiled(const char* src, int64_t period, size_t elem, int64_t start, int64_t len, char* dst) {
  int64_t pos = start % period;
  while (len > 0) {
    int64_t k = std::min(len, period - pos);
    std::memcpy(dst, src + pos * static_cast<int64_t>(elem), static_cast<size_t>(k) * elem);
    dst += k * static_cast<int64_t>(elem);
    len -= k;
    pos = 0;
  }
}

// Asks for the lines of [p, p + bytes) ahead of use, into L2: a group reads
// several arrays a block at a time, which hides them from the hardware's
// stream prefetcher.
void prefetch(const char* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 2);
}

struct GroupRun {
  const FusedGroup& group;
  const KernelContext& ctx;
  std::vector<InputMode> modes;
  int64_t n;

  // Runs every step over blocks [first, last) of the group's block length
  // on this thread (in shorter ones when its scratch is the fallback).
  void blocks(int64_t first, int64_t last) const {
    alignas(64) char fallback[kFallbackScratchBytes];
    Scratch own(group, fallback);
    const int64_t block = own.block_length();
    const size_t block_bytes = static_cast<size_t>(block) * sizeof(double);
    char* scratch = own.data();
    size_t num_inputs = ctx.inputs.size();
    std::vector<const char*> in(num_inputs);
    std::vector<char*> out(ctx.outputs.size());
    const int64_t end = std::min(n, last * group.block_length);
    for (int64_t start = first * group.block_length; start < end; start += block) {
      int64_t len = std::min(block, end - start);
      for (size_t i = 0; i < num_inputs; ++i) {
        const NDArray& a = ctx.in(i);
        const char* base = static_cast<const char*>(a.data());
        int64_t elem = static_cast<int64_t>(group.input_bytes[i]);
        if (modes[i] == InputMode::kFull) {
          in[i] = base + start * elem;
        } else if (modes[i] == InputMode::kScalar) {
          in[i] = base;
        } else {
          char* dst = scratch + static_cast<size_t>(group.gather_block[i]) * block_bytes;
          gather_tiled(base, a.numel(), group.input_bytes[i], start, len, dst);
          in[i] = dst;
        }
      }
      if (start + len < end) {
        int64_t next = std::min(block, end - start - len);
        for (size_t i = 0; i < num_inputs; ++i)
          if (modes[i] == InputMode::kFull)
            prefetch(in[i] + len * static_cast<int64_t>(group.input_bytes[i]), static_cast<size_t>(next) * group.input_bytes[i]);
      }
      for (size_t k = 0; k < out.size(); ++k)
        out[k] = static_cast<char*>(ctx.out(k).data()) + start * static_cast<int64_t>(group.output_bytes[k]);
      auto locate = [&](const BlockRef& r) -> char* {
        if (r.where == BlockRef::kInput) return const_cast<char*>(in[static_cast<size_t>(r.index)]);
        if (r.where == BlockRef::kOutput) return out[static_cast<size_t>(r.index)];
        return scratch + static_cast<size_t>(r.index) * block_bytes;
      };
      for (const FusedStep& step : group.steps) {
        BlockArgs args;
        args.n = len;
        for (size_t k = 0; k < step.args.size(); ++k) {
          const BlockRef& r = step.args[k];
          args.in[k] = locate(r);
          args.scalar[k] = r.where == BlockRef::kInput && modes[static_cast<size_t>(r.index)] == InputMode::kScalar;
        }
        args.out = locate(step.out);
        step.fn(args);
      }
    }
  }
};

void run_group(const FusedGroup& group, KernelContext& ctx) {
  int64_t n = ctx.out(0).numel();
  if (n == 0) return;
  GroupRun run{group, ctx, {}, n};
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    int64_t m = ctx.in(i).numel();
    if (m == n) {
      run.modes.push_back(InputMode::kFull);
    } else if (m == 1) {
      run.modes.push_back(InputMode::kScalar);
    } else {
      if (group.gather_block[i] < 0 || m == 0 || n % m != 0)
        ctx.fail("fused input #", i, " has ", m, " elements, which do not repeat over the group's ", n);
      run.modes.push_back(InputMode::kTiled);
    }
  }
  int64_t num_blocks = (n + group.block_length - 1) / group.block_length;
  int64_t work_per_block = group.block_length * static_cast<int64_t>(group.steps.size());
  int64_t grain = std::max<int64_t>(1, kParallelGrain / work_per_block);
  parallel_for(num_blocks, grain, [&](int64_t first, int64_t last) { run.blocks(first, last); });
}

}  // namespace

int64_t fused_block_length(int num_scratch) {
  int64_t block = kFusedBlock;
  while (block > kMinFusedBlock && num_scratch * block * static_cast<int64_t>(sizeof(double)) > kFusedScratchBudget)
    block /= 2;
  return block;
}

Kernel fused_kernel(std::shared_ptr<const FusedGroup> group) {
  return [group](KernelContext& ctx) { run_group(*group, ctx); };
}

}  // namespace aj
