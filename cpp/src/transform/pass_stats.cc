// The per-thread sink of pass counts (transform/pass_stats.h).
#include "adjoint/transform/pass_stats.h"

#include <algorithm>

namespace aj {

namespace detail {
thread_local PassStats* pass_stats_sink = nullptr;
}

void PassStats::open(std::string pass) {
  open_.push_back(sections_.size());
  sections_.push_back({std::move(pass), {}});
}

void PassStats::close() {
  if (!open_.empty()) open_.pop_back();
}

void PassStats::add(std::string_view what, int64_t n) {
  if (open_.empty()) return;
  auto& counts = sections_[open_.back()].counts;
  auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == what; });
  if (it == counts.end()) counts.emplace_back(std::string(what), n);
  else it->second += n;
}

void PassStats::split_off(std::string_view what, std::string pass) {
  int64_t n = 0;
  if (!open_.empty()) {
    auto& counts = sections_[open_.back()].counts;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == what; });
    if (it != counts.end()) {
      n = it->second;
      counts.erase(it);
    }
  }
  sections_.push_back({std::move(pass), {}});
  if (n) sections_.back().counts.emplace_back(std::string(what), n);
}

}  // namespace aj
