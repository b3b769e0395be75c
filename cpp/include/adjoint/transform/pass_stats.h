// What passes did, counted as they do it, for Python's Pass.explain: which
// rules fired how often, how many bindings were merged, removed, lifted.
// Collecting is off by default and per thread: a CollectPassStats scope
// installs a sink on the thread that runs the passes; outside one, a count
// is one thread-local load and a branch. A PassStatsScope opens a section
// named after a pass (the bindings open one per pass they run; Gradient
// opens one per stage); counts go to the innermost open section, and
// split_pass_stat moves one of them to a section of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aj {

struct PassStatsSection {
  std::string pass;
  std::vector<std::pair<std::string, int64_t>> counts;  // in the order first counted
};

class PassStats {
 public:
  void open(std::string pass);
  void close();
  // Adds n to `what` in the innermost open section (nothing when none is open).
  void add(std::string_view what, int64_t n);
  // Appends a section `pass` and moves the count of `what` from the
  // innermost open section into it (a section with no counts when there is
  // none): for a stage doing the work of two passes in one walk.
  void split_off(std::string_view what, std::string pass);
  // The sections in the order they were opened.
  const std::vector<PassStatsSection>& sections() const { return sections_; }

 private:
  std::vector<PassStatsSection> sections_;
  std::vector<size_t> open_;  // indices into sections_, innermost last
};

namespace detail {
extern thread_local PassStats* pass_stats_sink;
}

// This thread's sink, or nullptr when no CollectPassStats scope is active.
inline PassStats* pass_stats() { return detail::pass_stats_sink; }

// Counts n of `what` (a rule's name, "bindings removed") when collecting.
inline void count_pass_stat(std::string_view what, int64_t n = 1) {
  if (PassStats* s = detail::pass_stats_sink; s && n) s->add(what, n);
}

// Reports the `what` counted so far in the innermost section as the work of
// a pass of its own, `pass`, on the next line (when collecting).
inline void split_pass_stat(std::string_view what, const char* pass) {
  if (PassStats* s = detail::pass_stats_sink) s->split_off(what, pass);
}

// Installs `stats` as this thread's sink for the scope (the previous one,
// if any, comes back after).
class CollectPassStats {
 public:
  explicit CollectPassStats(PassStats& stats) : previous_(detail::pass_stats_sink) { detail::pass_stats_sink = &stats; }
  ~CollectPassStats() { detail::pass_stats_sink = previous_; }
  CollectPassStats(const CollectPassStats&) = delete;
  CollectPassStats& operator=(const CollectPassStats&) = delete;

 private:
  PassStats* previous_;
};

// A section named `pass` for the scope, when collecting.
class PassStatsScope {
 public:
  explicit PassStatsScope(const char* pass) : stats_(detail::pass_stats_sink) {
    if (stats_) stats_->open(pass);
  }
  ~PassStatsScope() {
    if (stats_) stats_->close();
  }
  PassStatsScope(const PassStatsScope&) = delete;
  PassStatsScope& operator=(const PassStatsScope&) = delete;

 private:
  PassStats* stats_;
};

}  // namespace aj
