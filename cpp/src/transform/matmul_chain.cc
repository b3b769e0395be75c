// Matrix-chain ordering (transform/matmul_chain.h): the interval DP over
// the products of a chain, per sample point of its dims.
#include "adjoint/transform/matmul_chain.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "adjoint/op/linalg.h"
#include "adjoint/op/ops.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

using Point = std::map<std::string, double>;

// The product of each interval [i, j] (a placeholder var of its type) and
// the FLOPs of joining [i, s] and [s + 1, j], when that matmul types.
class ChainTable {
 public:
  ChainTable(const std::vector<Expr>& leaves, const Attrs& attrs, const FormCost& cost)
      : k_(leaves.size()), cost_(cost), product_(k_ * k_), free_(k_ * k_, 0), join_(k_ * k_) {
    for (size_t i = 0; i < k_; ++i) {
      product_[i * k_ + i] = leaves[i];
      free_[i * k_ + i] = cost.computable(leaves[i]);
    }
    for (size_t len = 2; len <= k_; ++len)
      for (size_t i = 0; i + len <= k_; ++i) fill(i, i + len - 1, attrs);
  }

  bool types() const { return product_[k_ - 1] != nullptr; }
  bool free(size_t i, size_t j) const { return free_[i * k_ + j]; }
  // The FLOPs of joining [i, s] and [s + 1, j]; nullptr when that does not type.
  const Dim* join(size_t i, size_t s, size_t j) const {
    const std::optional<Dim>& d = join_[i * k_ + j][s - i];
    return d ? &*d : nullptr;
  }
  std::set<std::string> symbols() const {
    std::set<std::string> out;
    for (const std::vector<std::optional<Dim>>& splits : join_)
      for (const std::optional<Dim>& d : splits)
        if (d && !d->is_const())
          for (const std::string& s : d->symbols()) out.insert(s);
    return out;
  }

 private:
  // The interval's product type from its first split that types (matmul
  // typing is associative once the middle operands are matrices), then the
  // FLOPs of every split on that type, from the matmul's FLOP rule on types
  // (no call is built); a split that would not type is caught when its
  // bracketing is built.
  void fill(size_t i, size_t j, const Attrs& attrs) {
    Type type;
    size_t first = j;  // the first split that types
    for (size_t s = i; s < j && !type; ++s) {
      const Expr& left = product_[i * k_ + s];
      const Expr& right = product_[(s + 1) * k_ + j];
      if (!left || !right) continue;
      try {
        type = make_call(ops::matmul.def(), {left, right}, attrs)->type();
        first = s;
      } catch (const TypeInferenceError&) {
        continue;
      }
    }
    join_[i * k_ + j].resize(j - i);
    if (!type) return;
    for (size_t s = first; s < j; ++s)
      if (product_[i * k_ + s] && product_[(s + 1) * k_ + j])
        join_[i * k_ + j][s - i] = join_flops(*product_[i * k_ + s]->type(), *type);
    product_[i * k_ + j] = std::make_shared<VarNode>("part", type);
    free_[i * k_ + j] = free(i, j - 1) && free(j, j) && cost_.fixed_by_weights(*type);
  }

  // The FLOPs of a matmul of `lhs` giving `out`; nullopt when the count is
  // beyond int64 (such a split is never chosen).
  static std::optional<Dim> join_flops(const TypeNode& lhs, const TypeNode& out) {
    try {
      return matmul_flops(lhs, out);
    } catch (const SizeOverflowError&) {
      return std::nullopt;
    }
  }

  size_t k_;
  const FormCost& cost_;
  std::vector<Expr> product_;
  std::vector<uint8_t> free_;
  std::vector<std::vector<std::optional<Dim>>> join_;  // per interval [i, j], per split s - i
};

double evaluate(const Dim& d, const Point& point) {
  if (d.is_const()) return static_cast<double>(d.value());
  double total = 0;
  for (const DimTerm& term : d.terms()) {
    double product = static_cast<double>(term.coeff);
    for (const auto& [symbol, exponent] : term.monomial) product *= std::pow(point.at(symbol), exponent);
    total += product;
  }
  return total;
}

// The bounds' lows, highs and a point between, for the given symbols.
std::vector<Point> sample_points(const std::set<std::string>& symbols, const DimBounds& bounds) {
  Point low, high, middle;
  for (const std::string& s : symbols) {
    DimInterval in = bounds.get(s);
    double lo = std::max<double>(static_cast<double>(in.low), 1);
    double hi = in.high ? std::max<double>(static_cast<double>(*in.high), lo) : lo * 1024;
    low[s] = lo;
    high[s] = hi;
    middle[s] = std::round(std::sqrt(lo * hi));
  }
  if (symbols.empty()) return {low};
  return {low, middle, high};
}

// The cheapest bracketing at one point, as a form over the leaves.
Expr cheapest_at(const ChainTable& table, const std::vector<Expr>& leaves, const Attrs& attrs, const Point& point) {
  const size_t k = leaves.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(k * k, inf);
  std::vector<size_t> split(k * k, 0);
  for (size_t i = 0; i < k; ++i) best[i * k + i] = 0;
  for (size_t len = 2; len <= k; ++len)
    for (size_t i = 0; i + len <= k; ++i) {
      size_t j = i + len - 1;
      for (size_t s = i; s < j; ++s) {
        const Dim* join = table.join(i, s, j);
        if (!join) continue;
        double c = best[i * k + s] + best[(s + 1) * k + j] + (table.free(i, j) ? 0 : evaluate(*join, point));
        if (c < best[i * k + j]) best[i * k + j] = c, split[i * k + j] = s;
      }
    }
  if (best[k - 1] == inf) return nullptr;
  std::function<Expr(size_t, size_t)> build = [&](size_t i, size_t j) -> Expr {
    if (i == j) return leaves[i];
    size_t s = split[i * k + j];
    return make_call(ops::matmul.def(), {build(i, s), build(s + 1, j)}, attrs);
  };
  return build(0, k - 1);
}

}  // namespace

std::vector<Expr> cheapest_bracketings(const std::vector<Expr>& leaves, const Attrs& attrs, const FormCost& cost) {
  ChainTable table(leaves, attrs, cost);
  if (!table.types()) return {};
  std::vector<Expr> out;
  for (const Point& point : sample_points(table.symbols(), cost.bounds())) {
    Expr form;
    try {
      form = cheapest_at(table, leaves, attrs, point);
    } catch (const TypeInferenceError&) {
      continue;  // a bracketing that does not type (see ChainTable::fill)
    }
    if (!form) continue;
    bool seen = false;
    for (const Expr& f : out) seen = seen || same_form(f, form);
    if (!seen) out.push_back(form);
  }
  return out;
}

}  // namespace aj
