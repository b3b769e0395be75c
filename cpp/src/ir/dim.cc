// Symbolic dim arithmetic: canonical polynomials over named symbols, checked
// against the limits in dim.h. The grammar of dim strings is in dim_parse.cc.
#include "adjoint/ir/dim.h"

#include <algorithm>
#include <functional>

#include "adjoint/support/error.h"
#include "adjoint/support/hash.h"

namespace aj {
namespace {

int monomial_degree(const Monomial& m) {
  int d = 0;
  for (const auto& f : m) d += f.second;
  return d;
}

// Canonical order of terms: higher degree first, then by monomial text.
bool term_before(const DimTerm& a, const DimTerm& b) {
  int da = monomial_degree(a.monomial), db = monomial_degree(b.monomial);
  if (da != db) return da > db;
  return a.monomial < b.monomial;
}

Monomial multiply(const Monomial& a, const Monomial& b) {
  std::map<std::string, int> powers;
  for (const auto& f : a) powers[f.first] += f.second;
  for (const auto& f : b) powers[f.first] += f.second;
  return Monomial(powers.begin(), powers.end());
}

std::vector<DimTerm> as_terms(const Dim& d) { return d.terms(); }

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw SizeOverflowError(str("dim arithmetic overflows: ", a, " + ", b));
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw SizeOverflowError(str("dim arithmetic overflows: ", a, " * ", b));
  return r;
}

}  // namespace

Dim Dim::symbol(const std::string& name) {
  return from_terms({DimTerm{Monomial{{name, 1}}, 1}});
}

Dim Dim::from_terms(std::vector<DimTerm> terms) {
  std::sort(terms.begin(), terms.end(), term_before);
  std::vector<DimTerm> merged;
  for (auto& t : terms) {
    if (!merged.empty() && merged.back().monomial == t.monomial) {
      merged.back().coeff = checked_add(merged.back().coeff, t.coeff);
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const DimTerm& t) { return t.coeff == 0; }),
               merged.end());
  if (merged.size() > kMaxTerms)
    throw DimLimitError(str("symbolic dim has ", merged.size(), " terms, more than ", kMaxTerms));
  if (merged.empty()) return Dim(0);
  if (merged.size() == 1 && merged[0].monomial.empty()) return Dim(merged[0].coeff);
  for (const auto& t : merged)  // keeps -coeff defined, so the text of every term parses back
    if (t.coeff == INT64_MIN) throw SizeOverflowError("dim arithmetic overflows: a coefficient of -2**63");
  Dim d;
  d.value_ = 0;
  d.terms_ = std::make_shared<const std::vector<DimTerm>>(std::move(merged));
  return d;
}

std::vector<DimTerm> Dim::terms() const {
  if (terms_) return *terms_;
  if (value_ == 0) return {};
  return {DimTerm{{}, value_}};
}

std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> out;
  if (!terms_) return out;
  for (const auto& t : *terms_)
    for (const auto& f : t.monomial)
      if (std::find(out.begin(), out.end(), f.first) == out.end()) out.push_back(f.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<LinearDim> as_linear_dim(const Dim& d) {
  std::vector<DimTerm> terms = d.terms();  // highest degree first, the constant last
  if (terms.empty() || terms.size() > 2 || terms[0].coeff <= 0) return std::nullopt;
  const Monomial& k = terms[0].monomial;
  if (k.size() != 1 || k[0].second != 1 || (terms.size() == 2 && !terms[1].monomial.empty())) return std::nullopt;
  return LinearDim{k[0].first, terms[0].coeff, terms.size() == 2 ? terms[1].coeff : 0};
}

std::optional<std::string> growing_symbol(const Dim& d, const std::map<std::string, int64_t>& bound) {
  std::optional<std::string> k;
  for (const std::string& s : d.symbols()) {
    if (bound.count(s)) continue;
    if (k) return std::nullopt;
    k = s;
  }
  if (!k) return std::nullopt;
  for (const DimTerm& t : d.terms())
    for (const auto& [s, power] : t.monomial)
      if (s == *k && t.coeff <= 0) return std::nullopt;
  return k;
}

int Dim::degree() const {
  return terms_ ? monomial_degree(terms_->front().monomial) : 0;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t>& env) const {
  if (!terms_) return value_;
  int64_t total = 0;
  for (const auto& t : *terms_) {
    int64_t v = t.coeff;
    for (const auto& f : t.monomial) {
      auto it = env.find(f.first);
      if (it == env.end()) return std::nullopt;
      for (int i = 0; i < f.second; ++i) v = checked_mul(v, it->second);
    }
    total = checked_add(total, v);
  }
  return total;
}

Dim Dim::operator+(const Dim& o) const {
  if (is_const() && o.is_const()) return Dim(checked_add(value_, o.value_));
  auto t = as_terms(*this);
  auto u = as_terms(o);
  t.insert(t.end(), u.begin(), u.end());
  return from_terms(std::move(t));
}

Dim Dim::operator-(const Dim& o) const {
  if (is_const() && o.is_const()) {
    if (o.value_ == INT64_MIN) throw SizeOverflowError("dim arithmetic overflows");
    return Dim(checked_add(value_, -o.value_));
  }
  auto t = as_terms(*this);
  for (auto u : as_terms(o)) {
    if (u.coeff == INT64_MIN) throw SizeOverflowError("dim arithmetic overflows");
    u.coeff = -u.coeff;
    t.push_back(std::move(u));
  }
  return from_terms(std::move(t));
}

Dim Dim::operator*(const Dim& o) const {
  if (is_const() && o.is_const()) return Dim(checked_mul(value_, o.value_));
  if (degree() + o.degree() > kMaxDegree)
    throw DimLimitError(str("symbolic dim product has degree ", degree() + o.degree(), ", above ", kMaxDegree));
  auto ta = as_terms(*this), tb = as_terms(o);
  if (ta.size() * tb.size() > kMaxTerms * 4)
    throw DimLimitError(str("symbolic dim product has ", ta.size() * tb.size(), " terms before merging, more than ",
                            kMaxTerms * 4));
  std::vector<DimTerm> out;
  for (const auto& a : ta)
    for (const auto& b : tb)
      out.push_back(DimTerm{multiply(a.monomial, b.monomial), checked_mul(a.coeff, b.coeff)});
  return from_terms(std::move(out));
}

bool Dim::operator==(const Dim& o) const {
  if (is_const() != o.is_const()) return false;
  if (is_const()) return value_ == o.value_;
  if (terms_ == o.terms_) return true;
  const auto& a = *terms_;
  const auto& b = *o.terms_;
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].coeff != b[i].coeff || a[i].monomial != b[i].monomial) return false;
  return true;
}

size_t Dim::hash() const {
  if (!terms_) return std::hash<int64_t>()(value_);
  size_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](size_t v) { h = hash_combine(h, v); };
  for (const auto& t : *terms_) {
    mix(std::hash<int64_t>()(t.coeff));
    for (const auto& f : t.monomial) {
      mix(std::hash<std::string>()(f.first));
      mix(std::hash<int>()(f.second));
    }
  }
  return h;
}

std::string Dim::to_string() const {
  if (!terms_) return std::to_string(value_);
  std::string out;
  bool first = true;
  for (const auto& t : *terms_) {
    int64_t c = t.coeff;
    if (first) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    int64_t mag = c < 0 ? -c : c;
    first = false;
    if (t.monomial.empty()) {
      out += std::to_string(mag);
      continue;
    }
    bool need_star = false;
    if (mag != 1) {
      out += std::to_string(mag);
      need_star = true;
    }
    for (const auto& f : t.monomial) {
      if (need_star) out += "*";
      out += f.first;
      if (f.second != 1) out += "**" + std::to_string(f.second);
      need_star = true;
    }
  }
  return out;
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    if (shape[i].is_const()) out += shape[i].to_string();
    else out += "\"" + shape[i].to_string() + "\"";
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

}  // namespace aj
