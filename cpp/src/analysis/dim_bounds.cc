// DimBounds' validation and compare(): the shift-and-pay proof that a
// polynomial difference is >= 0 on a box (the method is in dim_bounds.h).
// All arithmetic is in checked 128-bit integers; an overflow ends the proof
// attempt (kUnknown), never wraps.
#include "adjoint/analysis/dim_bounds.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "adjoint/support/error.h"

namespace aj {
namespace {

using Wide = __int128;
using Exponents = std::vector<int>;           // one exponent per axis
using ShiftedPoly = std::map<Exponents, Wide>;  // polynomial in the t's

// A symbol of the difference, shifted: s = low + t, t in [0, width].
struct Axis {
  Wide low;
  std::optional<Wide> width;  // nullopt: unbounded
};

bool checked_mul(Wide a, Wide b, Wide* out) { return !__builtin_mul_overflow(a, b, out); }
bool checked_add(Wide a, Wide b, Wide* out) { return !__builtin_add_overflow(a, b, out); }

bool checked_pow(Wide base, int exp, Wide* out) {
  Wide r = 1;
  for (int i = 0; i < exp; ++i)
    if (!checked_mul(r, base, &r)) return false;
  *out = r;
  return true;
}

// q - p as terms over symbol names, zero coefficients dropped.
std::map<Monomial, Wide> difference(const Dim& p, const Dim& q) {
  std::map<Monomial, Wide> d;
  for (const DimTerm& t : q.terms()) d[t.monomial] += t.coeff;
  for (const DimTerm& t : p.terms()) d[t.monomial] -= t.coeff;
  for (auto it = d.begin(); it != d.end();) it = it->second == 0 ? d.erase(it) : std::next(it);
  return d;
}

// (low + t)^e as (exponent of t, coefficient) pairs; only t^0 when t is fixed.
std::optional<std::vector<std::pair<int, Wide>>> shifted_power(const Axis& axis, int e) {
  std::vector<std::pair<int, Wide>> out;
  int top = axis.width && *axis.width == 0 ? 0 : e;
  Wide binom = 1;
  for (int j = 0; j <= top; ++j) {
    Wide low_power, coeff;
    if (!checked_pow(axis.low, e - j, &low_power) || !checked_mul(binom, low_power, &coeff)) return std::nullopt;
    if (coeff != 0) out.emplace_back(j, coeff);
    binom = binom * (e - j) / (j + 1);  // C(e, j+1), <= C(64, 32): no overflow
  }
  return out;
}

// Adds coeff * prod over axes of (low + t)^e to `out`; false on overflow or
// when `out` would exceed kMaxShiftedTerms.
bool add_shifted_term(const std::vector<Axis>& axes, const Exponents& exps, Wide coeff, ShiftedPoly* out) {
  std::vector<std::vector<std::pair<int, Wide>>> factors;
  size_t combinations = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto f = shifted_power(axes[i], exps[i]);
    if (!f) return false;
    if (f->empty()) return true;  // (0 + t)^e with t fixed at 0: the term is 0
    combinations *= f->size();
    if (combinations > kMaxShiftedTerms) return false;
    factors.push_back(std::move(*f));
  }
  // Odometer over one choice per factor.
  std::vector<size_t> pick(axes.size(), 0);
  for (size_t done = 0; done < combinations; ++done) {
    Exponents e(axes.size());
    Wide c = coeff;
    for (size_t i = 0; i < axes.size(); ++i) {
      e[i] = factors[i][pick[i]].first;
      if (!checked_mul(c, factors[i][pick[i]].second, &c)) return false;
    }
    Wide& slot = (*out)[e];
    if (!checked_add(slot, c, &slot)) return false;
    if (out->size() > kMaxShiftedTerms) return false;
    for (size_t i = 0; i < axes.size() && ++pick[i] == factors[i].size(); ++i) pick[i] = 0;
  }
  return true;
}

// The difference with every symbol shifted to its low bound (step 2).
std::optional<ShiftedPoly> shift(const std::map<Monomial, Wide>& d, const DimBounds& bounds,
                                 std::vector<Axis>* axes) {
  std::vector<std::string> names;
  for (const auto& [m, c] : d)
    for (const auto& [name, power] : m) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& name : names) {
    DimInterval iv = bounds.get(name);
    axes->push_back(Axis{iv.low, iv.high ? std::optional<Wide>(Wide(*iv.high) - iv.low) : std::nullopt});
  }
  ShiftedPoly out;
  for (const auto& [m, c] : d) {
    Exponents e(names.size(), 0);
    for (const auto& [name, power] : m)
      e[std::lower_bound(names.begin(), names.end(), name) - names.begin()] = power;
    if (!add_shifted_term(*axes, e, c, &out)) return std::nullopt;
  }
  for (auto it = out.begin(); it != out.end();) it = it->second == 0 ? out.erase(it) : std::next(it);
  return out;
}

// k with t^need <= k * t^have for every integer t in [0, width] of each
// axis, or nullopt when no such k exists or it overflows (step 3).
std::optional<Wide> payment_factor(const std::vector<Axis>& axes, const Exponents& need, const Exponents& have) {
  Wide k = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (need[i] == have[i]) continue;
    if (need[i] < have[i]) {
      if (need[i] == 0) return std::nullopt;
      continue;
    }
    Wide w_power;
    if (!axes[i].width || !checked_pow(*axes[i].width, need[i] - have[i], &w_power)) return std::nullopt;
    if (!checked_mul(k, w_power, &k)) return std::nullopt;
  }
  return k;
}

int total_degree(const Exponents& e) { return std::accumulate(e.begin(), e.end(), 0); }

// Step 3: pays every negative term with positive ones; true if all are paid.
bool pay_negatives(const std::vector<Axis>& axes, const ShiftedPoly& poly) {
  std::vector<std::pair<Exponents, Wide>> positives, negatives;
  for (const auto& [e, c] : poly) (c > 0 ? positives : negatives).emplace_back(e, c > 0 ? c : -c);
  std::stable_sort(negatives.begin(), negatives.end(),
                   [](const auto& a, const auto& b) { return total_degree(a.first) > total_degree(b.first); });
  for (const auto& [need_exps, amount] : negatives) {
    std::vector<std::pair<Wide, size_t>> offers;  // (factor, index into positives)
    for (size_t j = 0; j < positives.size(); ++j)
      if (auto k = payment_factor(axes, need_exps, positives[j].first)) offers.emplace_back(*k, j);
    std::stable_sort(offers.begin(), offers.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Wide owed = amount;
    for (const auto& [k, j] : offers) {
      if (owed == 0) break;
      Wide units = std::min(owed, positives[j].second / k);
      positives[j].second -= units * k;
      owed -= units;
    }
    if (owed > 0) return false;
  }
  return true;
}

bool nonnegative_on_box(const std::vector<Axis>& axes, const ShiftedPoly& poly) {
  bool all_nonnegative = std::all_of(poly.begin(), poly.end(), [](const auto& t) { return t.second >= 0; });
  return all_nonnegative || pay_negatives(axes, poly);
}

ShiftedPoly negated(const ShiftedPoly& poly) {
  ShiftedPoly out;
  for (const auto& [e, c] : poly) out.emplace(e, -c);
  return out;
}

}  // namespace

void DimBounds::set(const std::string& symbol, DimInterval interval, const std::string& where) {
  std::string name = str(where, ": '", escape(symbol), "'");
  bool plain_name = false;
  try {
    std::vector<DimTerm> terms = Dim::parse(symbol).terms();
    plain_name = terms.size() == 1 && terms[0].coeff == 1 && terms[0].monomial == Monomial{{symbol, 1}};
  } catch (const Error&) {
    plain_name = false;
  }
  if (!plain_name) throw TransformError(str(name, " is not a symbol name"));
  if (interval.low < 0) throw TransformError(str(name, ": low bound ", interval.low, " is negative (dims are >= 0)"));
  if (interval.high && *interval.high < interval.low)
    throw TransformError(str(name, ": low bound ", interval.low, " is greater than high bound ", *interval.high));
  intervals_[symbol] = interval;
}

DimInterval DimBounds::get(const std::string& symbol) const {
  auto it = intervals_.find(symbol);
  return it == intervals_.end() ? DimInterval{} : it->second;
}

void DimBounds::require_known(const std::set<std::string>& known, const std::string& where) const {
  for (const auto& [symbol, interval] : intervals_) {
    if (known.count(symbol)) continue;
    std::string listed;
    for (const std::string& k : known) listed += (listed.empty() ? "" : ", ") + escape(k);
    throw TransformError(str(where, ": '", escape(symbol), "' is not a symbol of the program (its symbols: ",
                             listed.empty() ? "none" : listed, ")"));
  }
}

const char* ordering_name(Ordering o) {
  switch (o) {
    case Ordering::kEqual: return "==";
    case Ordering::kLessEqual: return "<=";
    case Ordering::kGreaterEqual: return ">=";
    case Ordering::kUnknown: break;
  }
  return "unknown";
}

Ordering compare(const Dim& p, const Dim& q, const DimBounds& bounds) {
  std::map<Monomial, Wide> d = difference(p, q);
  if (d.empty()) return Ordering::kEqual;
  std::vector<Axis> axes;
  std::optional<ShiftedPoly> shifted = shift(d, bounds, &axes);
  if (!shifted) return Ordering::kUnknown;
  bool less_equal = nonnegative_on_box(axes, *shifted);
  bool greater_equal = nonnegative_on_box(axes, negated(*shifted));
  if (less_equal && greater_equal) return Ordering::kEqual;
  if (less_equal) return Ordering::kLessEqual;
  return greater_equal ? Ordering::kGreaterEqual : Ordering::kUnknown;
}

bool proves_nonnegative(const Dim& d, const DimBounds& bounds) {
  Ordering o = compare(Dim(0), d, bounds);
  return o == Ordering::kEqual || o == Ordering::kLessEqual;
}

}  // namespace aj
