// Interrupts: work of the core that may run long (the graph matcher's
// search and the matching of one expr, each exponential in the worst case:
// pattern/graph.h, pattern/match.h) asks now and then whether to stop,
// so Ctrl-C and a Jupyter kernel interrupt reach it. The core knows nothing
// of Python: the bindings install the question (Python's pending signals),
// which throws whatever ends the work; with none installed, nothing stops.
#pragma once

#include <atomic>
#include <cstdint>

namespace aj {

// Throws to stop the work; returns when it may go on.
using InterruptCheck = void (*)();

inline std::atomic<InterruptCheck> g_interrupt_check{nullptr};

inline void set_interrupt_check(InterruptCheck check) { g_interrupt_check.store(check); }

// Ticks of one piece of work: every kEvery-th asks the installed check.
class InterruptPoll {
 public:
  static constexpr uint32_t kEvery = 1u << 14;

  void tick() {
    if (++ticks_ % kEvery == 0)
      if (InterruptCheck check = g_interrupt_check.load(std::memory_order_relaxed)) check();
  }

 private:
  uint32_t ticks_ = 0;
};

}  // namespace aj
