// Deciding between two symbolic sizes (FLOP costs, element counts) under
// integer bounds on their symbols: DimBounds and compare(). A pass that
// chooses between two forms of a program by cost (ReassociateMatmul) asks
// compare() whether one cost is no larger for every dim value it may run
// with, and keeps its input when the answer is unknown.
//
// compare is sound but incomplete: an answer other than kUnknown holds at
// every integer point of the box; kUnknown means no proof was found (the
// order may still hold). Method, for D = q - p (and then for -D):
//   1. D == 0 as a polynomial: kEqual. Constants are decided exactly.
//   2. Shift every symbol to its low bound, s = low + t with integer
//      t in [0, high - low], and expand D into a polynomial in the t's
//      (a fixed symbol, low == high, has t = 0 and drops out). Every monomial
//      in the t's is >= 0 on the box, so D >= 0 if no coefficient is negative.
//   3. Otherwise pay each negative term -c*N with positive terms c'*P:
//      N <= k*P on the box, per variable t of exponent a in N and b in P,
//      with factor 1 when a == b, w^(a-b) when a > b and t's width w is
//      finite (t^a <= w^(a-b) * t^b), and 1 when 1 <= a < b (integers: t^a
//      <= t^b; a == 0 < b fails at t = 0). A negative term takes k units of
//      a positive coefficient per unit it covers; greedily, higher-degree
//      negatives first, cheapest k first. D >= 0 if every negative is paid.
//   4. Both D >= 0 and -D >= 0 proved: kEqual (equal on the box).
// Step 2 alone decides every box where the difference has no negative
// coefficient after the shift, e.g. 2*m*n <= 2*m*n + 2*n*r + m; step 3 uses
// upper bounds (n - r >= 0 for r <= 64 <= n). It cannot prove orders that
// need cancellation between terms sharing no monomial structure (e.g.
// a*c*(b + d) <= b*d*(a + c) for a, c <= 64 <= b, d can fail when the margin
// is thin) and gives up (kUnknown) when the expansion exceeds kMaxShiftedTerms
// terms or an intermediate value overflows 128 bits. The work is the size of
// the shifted expansion times the number of its negative terms: small for
// cost polynomials (a few symbols, degree <= 4).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "adjoint/ir/dim.h"

namespace aj {

// An integer interval [low, high] a symbol ranges over; high unbounded when
// nullopt.
struct DimInterval {
  int64_t low = 1;
  std::optional<int64_t> high;
};

// Bounds per symbol. A symbol not listed ranges over [1, inf): sizes are
// >= 1 in practice. A listed low may be 0 (the IR allows empty dims) but not
// negative.
class DimBounds {
 public:
  // Sets symbol's interval; TransformError naming `where` and the symbol if
  // the symbol is not a plain name, low < 0 or low > high.
  void set(const std::string& symbol, DimInterval interval, const std::string& where = "dim_bounds");
  DimInterval get(const std::string& symbol) const;
  const std::map<std::string, DimInterval>& intervals() const { return intervals_; }
  // TransformError naming `where` and the first bounded symbol not in `known`.
  void require_known(const std::set<std::string>& known, const std::string& where = "dim_bounds") const;

 private:
  std::map<std::string, DimInterval> intervals_;
};

enum class Ordering {
  kEqual,         // p == q at every point of the box
  kLessEqual,     // p <= q at every point of the box
  kGreaterEqual,  // p >= q at every point of the box
  kUnknown,       // none of these was proved
};

const char* ordering_name(Ordering o);  // "==", "<=", ">=", "unknown"

// Whether p <= q, p >= q or both at every integer point of the box `bounds`
// describes (method above). compare(q, p, b) mirrors compare(p, q, b).
Ordering compare(const Dim& p, const Dim& q, const DimBounds& bounds = {});

// Whether d >= 0 at every integer point of the box (steps 2-3 above).
bool proves_nonnegative(const Dim& d, const DimBounds& bounds);

// Work limit of step 2: an expansion with more terms is kUnknown.
constexpr size_t kMaxShiftedTerms = 4096;

}  // namespace aj
