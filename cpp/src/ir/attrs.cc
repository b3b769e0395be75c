// Attr values: text literals, equality and hashing.
#include "adjoint/ir/attrs.h"

#include <cstring>
#include <functional>

#include "adjoint/ir/printer.h"
#include "adjoint/support/hash.h"

namespace aj {

namespace {
template <class... Ts> struct Overloaded : Ts... { using Ts::operator()...; };
template <class... Ts> Overloaded(Ts...) -> Overloaded<Ts...>;

uint64_t float_bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}
}  // namespace

// A string as the parser reads it back: quotes, backslashes, newlines and
// tabs escaped, other control characters (U+0000-U+001F, U+007F-U+009F) as
// \xNN, the code point U+00NN; the rest as it is (UTF-8).
std::string string_literal(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    unsigned char u = static_cast<unsigned char>(c);
    unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    bool c1 = u == 0xc2 && next >= 0x80 && next < 0xa0;  // U+0080-U+009F: c2 80 to c2 9f
    if (c1) u = static_cast<unsigned char>(s[++i]);
    if (c == '"' || c == '\\') out.append(1, '\\').append(1, c);
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f || c1) out.append("\\x").append(1, hex[u >> 4]).append(1, hex[u & 15]);
    else out += c;
  }
  return out + "\"";
}

std::string attr_to_string(const AttrValue& v) {
  return std::visit(
      Overloaded{
          [](const NoneValue&) -> std::string { return "None"; },
          [](bool b) -> std::string { return b ? "True" : "False"; },
          [](int64_t i) -> std::string { return std::to_string(i); },
          [](double d) -> std::string { return format_double(d); },
          [](const std::string& s) -> std::string { return string_literal(s); },
          [](const std::vector<int64_t>& l) -> std::string {
            std::string out = "[";
            for (size_t i = 0; i < l.size(); ++i) {
              if (i) out += ", ";
              out += std::to_string(l[i]);
            }
            return out + "]";
          },
          [](const Shape& s) -> std::string { return shape_to_string(s); },
          [](DType t) -> std::string { return std::string("\"") + dtype_name(t) + "\""; },
      },
      v);
}

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  // Floats compare by bits, as constants do: -0.0 is not 0.0 (1/x tells them
  // apart, so a pass must not merge them), and a NaN equals only its own bits.
  if (auto* x = std::get_if<double>(&a)) return float_bits(*x) == float_bits(std::get<double>(b));
  return a == b;
}

size_t attr_hash(const AttrValue& v) {
  size_t h = std::hash<size_t>()(v.index());
  auto mix = [&h](size_t x) { h = hash_combine(h, x); };
  std::visit(Overloaded{
                 [](const NoneValue&) {},
                 [&](bool b) { mix(b); },
                 [&](int64_t i) { mix(std::hash<int64_t>()(i)); },
                 [&](double d) { mix(std::hash<uint64_t>()(float_bits(d))); },
                 [&](const std::string& s) { mix(std::hash<std::string>()(s)); },
                 [&](const std::vector<int64_t>& l) {
                   for (auto i : l) mix(std::hash<int64_t>()(i));
                 },
                 [&](const Shape& s) {
                   mix(s.size());
                   for (const auto& d : s) mix(d.hash());
                 },
                 [&](DType t) { mix(static_cast<size_t>(t)); },
             },
             v);
  return h;
}

}  // namespace aj
