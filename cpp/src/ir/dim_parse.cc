// The one grammar of dim strings, read by Dim::parse for every caller: Dim
// and shapes from Python, and the text format (which locates the errors in
// its string literal). It is Python's syntax and precedence for the subset
// that writes integer polynomials:
//
//   sum     := product (('+' | '-') product)*
//   product := unary ('*' unary)*
//   unary   := '-' unary | power             -n**2 is -(n**2); 2*-n is 2*(-n)
//   power   := atom ['**' INT]               0 <= INT <= Dim::kMaxDegree
//   atom    := INT | NAME | '(' sum ')'      NAME := [A-Za-z_][A-Za-z0-9_]*
//
// INT is decimal, at most INT64_MAX; blanks are spaces and tabs. Division,
// floats, negative or chained exponents and other characters are errors. The
// value keeps Dim's limits (dim.h) and nesting stays within kMaxDepth, so no
// string exhausts the stack, time or memory; every symbolic dim's
// Dim::to_string text parses back to the same dim.
#include <cstdint>

#include "adjoint/ir/dim.h"
#include "adjoint/ir/names.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

class DimParser {
 public:
  explicit DimParser(std::string_view s) : s_(s) {}

  Dim parse() {
    Dim d = sum();
    if (!at_end()) unexpected();
    return d;
  }

 private:
  static constexpr int kMaxDepth = 64;  // parentheses and unary minus

  // One level of nesting for as long as it lives.
  class Nest {
   public:
    explicit Nest(DimParser& p) : p_(p) {
      if (++p_.depth_ > kMaxDepth) p_.fail(str("nested deeper than ", kMaxDepth, " levels"));
    }
    ~Nest() { --p_.depth_; }

   private:
    DimParser& p_;
  };

  [[noreturn]] void fail(const std::string& why) const { fail_at(pos_, why); }
  [[noreturn]] void fail_at(size_t at, const std::string& why) const {
    throw DimSyntaxError(str("bad symbolic dim \"", escape(s_), "\" at offset ", at, ": ", why), at);
  }
  // The error for the character at pos_, which no rule accepts.
  [[noreturn]] void unexpected() const {
    if (pos_ >= s_.size()) fail("unexpected end");
    char c = s_[pos_];
    if (c == '/' || c == '%')
      fail(str("'", c, "': a dim is an integer polynomial, with no division"));
    if (c == '.') fail("'.': a dim is an integer polynomial, with no floats");
    fail(str("unexpected '", escape(s_.substr(pos_, 1)), "'"));
  }

  bool at_end() {
    skip_blanks();
    return pos_ >= s_.size();
  }
  void skip_blanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  size_t here() {  // the offset of the next token
    skip_blanks();
    return pos_;
  }
  bool looking_at(std::string_view tok) {
    skip_blanks();
    return s_.substr(pos_, tok.size()) == tok;
  }
  bool eat(std::string_view tok) {
    if (!looking_at(tok)) return false;
    pos_ += tok.size();
    return true;
  }

  // Applies one arithmetic step; exceeding Dim's limits is an error here.
  template <typename Op>
  Dim checked(size_t at, Op op) const {
    try {
      return op();
    } catch (const SizeOverflowError& e) {
      fail_at(at, str("too large (", e.what(), ")"));
    }
  }

  Dim sum() {
    Dim d = product();
    for (;;) {
      size_t at = here();
      bool minus = eat("-");
      if (!minus && !eat("+")) return d;
      Dim rhs = product();
      d = checked(at, [&] { return minus ? d - rhs : d + rhs; });
    }
  }
  Dim product() {
    Dim d = unary();
    for (;;) {
      size_t at = here();
      if (!eat("*")) return d;
      Dim rhs = unary();
      d = checked(at, [&] { return d * rhs; });
    }
  }
  Dim unary() {
    size_t at = here();
    if (!eat("-")) return power();
    Nest nest(*this);
    Dim operand = unary();
    return checked(at, [&] { return Dim(0) - operand; });
  }
  Dim power() {
    Dim base = atom();
    size_t at = here();
    if (!eat("**")) return base;
    int64_t e = exponent();
    if (looking_at("**")) fail("chained '**': add parentheses, like (n**2)**3");
    Dim out(1);
    for (int64_t i = 0; i < e; ++i) out = checked(at, [&] { return out * base; });
    return out;
  }
  int64_t exponent() {
    if (looking_at("-")) fail("negative exponent: a dim is a polynomial");
    if (pos_ >= s_.size() || !is_digit(s_[pos_])) fail("'**' needs a non-negative integer exponent");
    size_t at = pos_;
    int64_t e = integer();
    if (e > Dim::kMaxDegree) fail_at(at, str("exponent ", e, " is above ", Dim::kMaxDegree));
    return e;
  }
  // Decimal digits at pos_, which the caller has checked.
  int64_t integer() {
    size_t start = pos_;
    int64_t v = 0;
    for (; pos_ < s_.size() && is_digit(s_[pos_]); ++pos_) {
      int digit = s_[pos_] - '0';
      if (v > (INT64_MAX - digit) / 10)
        fail_at(start, str("integer ", s_.substr(start, 20), "... is above 2**63 - 1"));
      v = v * 10 + digit;
    }
    if (at_float_part()) fail("a float: a dim is an integer polynomial, with no floats");
    if (pos_ < s_.size() && is_name_char(s_[pos_]))
      fail(str("expected an operator after ", s_.substr(start, pos_ - start), ", got '", s_[pos_], "'"));
    return v;
  }
  // Whether digits just read go on as a float: "2.5", "1e3", "1e-3".
  bool at_float_part() const {
    char c = pos_ < s_.size() ? s_[pos_] : ' ';
    char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : ' ';
    return c == '.' || ((c == 'e' || c == 'E') && (next == '+' || next == '-' || is_digit(next)));
  }
  Dim atom() {
    skip_blanks();
    if (pos_ >= s_.size()) unexpected();
    char c = s_[pos_];
    if (c == '(') {
      Nest nest(*this);
      ++pos_;
      Dim d = sum();
      if (!eat(")")) {
        if (at_end()) fail("expected ')'");
        unexpected();
      }
      return d;
    }
    if (is_digit(c)) return Dim(integer());
    if (!is_name_start(c)) unexpected();
    size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return Dim::symbol(std::string(s_.substr(start, pos_ - start)));
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Dim Dim::parse(std::string_view text) { return DimParser(text).parse(); }

}  // namespace aj
