// Names in the text format: keywords, valid names, and why a function name
// is not one (see names.h).
#include "adjoint/ir/names.h"

#include <algorithm>
#include <iterator>

#include "adjoint/support/error.h"

namespace aj {
namespace {

constexpr const char* kFunctionNameRule =
    "a function name must be an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*) that is not a Python keyword, "
    "as the text format reads it";

// The name as a message shows it: control characters as \xNN, the rest as given.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? escape(std::string_view(&c, 1)) : std::string(1, c);
  }
  return out;
}

// The character starting at byte i: one byte, or a UTF-8 lead byte with the
// continuation bytes after it.
std::string_view char_at(std::string_view s, size_t i) {
  size_t end = i + 1;
  if (static_cast<unsigned char>(s[i]) >= 0xc0)
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) ++end;
  return s.substr(i, end - i);
}

// What keeps `name` from being a valid name, or empty.
std::string name_flaw(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name[0] >= '0' && name[0] <= '9') return "starts with a digit";
  for (size_t i = 0; i < name.size(); ++i) {
    if (is_name_char(name[i])) continue;
    std::string_view c = char_at(name, i);
    bool ascii = static_cast<unsigned char>(name[i]) < 0x80;
    return str("holds '", shown(c), "'", ascii ? "" : ", which is not ASCII");
  }
  if (is_python_keyword(name)) return "is a Python keyword";
  return "";
}

}  // namespace

bool is_python_keyword(std::string_view s) {
  static constexpr std::string_view kKeywords[] = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break",
      "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
      "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not",
      "or", "pass", "raise", "return", "try", "while", "with", "yield"};
  return std::find(std::begin(kKeywords), std::end(kKeywords), s) != std::end(kKeywords);
}

bool is_valid_name(std::string_view s) {
  if (s.empty() || !is_name_start(s[0])) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return !is_python_keyword(s);
}

std::string function_name_problem(std::string_view name) {
  if (is_valid_name(name)) return "";
  return str("function name '", shown(name), "' ", name_flaw(name), ": ", kFunctionNameRule);
}

}  // namespace aj
