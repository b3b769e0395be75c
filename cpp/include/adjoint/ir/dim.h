// Dims: a non-negative integer or an integer polynomial over named symbols.
// Polynomials are kept in a canonical form (sorted terms, no zero
// coefficients), so equal polynomials compare equal and hash equal, and
// n + n == 2*n. Constant dims take no allocation. A symbolic dim has at most
// kMaxTerms terms, total degree at most kMaxDegree and coefficients in
// (INT64_MIN, INT64_MAX]: arithmetic beyond these throws SizeOverflowError
// (DimLimitError past the terms or the degree), so every symbolic dim's text
// parses back (dim_parse.cc holds the grammar).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aj {

// A product of symbols with positive powers, sorted by symbol name.
using Monomial = std::vector<std::pair<std::string, int>>;

struct DimTerm {
  Monomial monomial;  // empty for the constant term
  int64_t coeff;
};

class Dim {
 public:
  Dim() : value_(0) {}
  Dim(int64_t value) : value_(value) {}  // NOLINT: ints are dims
  static constexpr size_t kMaxTerms = 256;
  static constexpr int kMaxDegree = 64;

  static Dim symbol(const std::string& name);
  // Parses a dim string: "n", "2*n + m", "n*(m + 1)", "-n**2 + 2*n", with
  // Python's precedence (grammar in dim_parse.cc). Throws DimSyntaxError
  // naming the string, the offset and what is wrong.
  static Dim parse(std::string_view text);

  bool is_const() const { return terms_ == nullptr; }
  int64_t value() const { return value_; }  // only when is_const()
  std::optional<int64_t> as_const() const {
    return is_const() ? std::optional<int64_t>(value_) : std::nullopt;
  }
  // The terms, highest degree first, then by symbol names; constant last.
  std::vector<DimTerm> terms() const;
  std::vector<std::string> symbols() const;
  int degree() const;  // highest total degree of a term; 0 for constants

  // Evaluates with the given symbol values; nullopt if a symbol is unbound.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& env) const;

  Dim operator+(const Dim& o) const;
  Dim operator-(const Dim& o) const;
  Dim operator*(const Dim& o) const;
  bool operator==(const Dim& o) const;
  bool operator!=(const Dim& o) const { return !(*this == o); }
  size_t hash() const;

  // Canonical text: "3", "n", "2*n + m", "n**2 - 1", "-n**2 + 2*n".
  std::string to_string() const;

 private:
  static Dim from_terms(std::vector<DimTerm> terms);
  int64_t value_;
  std::shared_ptr<const std::vector<DimTerm>> terms_;  // null when constant
};

using Shape = std::vector<Dim>;

// A dim a*k + b in one symbol k with a > 0 (b may be 0 or negative): the
// value of k follows from the dim's, (value - b) / a, when that is a whole
// number >= 0. The executor binds a symbol so when no param has it as a dim
// by itself.
struct LinearDim {
  std::string symbol;
  int64_t a;
  int64_t b;
};
std::optional<LinearDim> as_linear_dim(const Dim& d);

// The symbol of d that `bound` leaves unbound, when it is the only one and
// every term holding it has a positive coefficient: with the other symbols'
// values >= 0, d then never shrinks as it grows, so a size comes from at most
// one value of it, which the executor finds by bisection (k**2, k**2 + k - 3,
// n*k + 1 with n bound; with no symbol bound, a dim in k alone always grows).
// Else nullopt.
std::optional<std::string> growing_symbol(const Dim& d, const std::map<std::string, int64_t>& bound = {});

std::string shape_to_string(const Shape& shape);  // (3, "n")

}  // namespace aj
