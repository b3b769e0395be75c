// The tokenizer of the text format (DESIGN.md §3) and the source-text helper
// that turns a byte offset into the located errors the parser throws
// ("line:col: reason", the source line, a caret). Internal to cpp/src/ir.
//
// Tokens follow Python's rules where the format needs them: a NEWLINE ends a
// logical line; newlines inside brackets are joined; blank and comment-only
// lines vanish; the first token of each logical line carries its indentation,
// which the parser checks. Tokens are views into the text: nothing is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adjoint/support/error.h"

namespace aj::text {

enum class Tok : uint8_t {
  kEnd,       // end of text
  kNewline,   // end of a logical line
  kName,      // identifier or keyword
  kInt,       // 123
  kFloat,     // 1.5, 1e-05, .5
  kString,    // "float32" or 'float32' (escapes allowed)
  kLParen, kRParen, kLBracket, kRBracket,
  kComma, kColon, kEqual, kArrow, kAt, kMinus,
};

struct Token {
  Tok kind = Tok::kEnd;
  bool line_start = false;     // first token of a logical line
  bool first_on_line = false;  // first token of its physical line
  size_t off = 0;              // byte offset of the token
  size_t len = 0;
  std::string_view indent;     // leading whitespace of the line, when line_start
};

// The text being parsed, with located error reporting.
class Source {
 public:
  explicit Source(std::string_view text) : text_(text) {}
  std::string_view text() const { return text_; }
  std::string_view view(const Token& t) const { return text_.substr(t.off, t.len); }
  int line_of(size_t off) const;
  SourceLoc locate(size_t off) const;

  template <typename E = ParseError>
  [[noreturn]] void fail(size_t off, std::string_view reason) const {
    SourceLoc loc = locate(off);
    std::string msg = message(loc, reason);
    throw E(msg, std::move(loc));
  }

 private:
  static std::string message(const SourceLoc& loc, std::string_view reason);
  std::string_view text_;
};

using aj::escape;  // text safe to show in a message (support/error.h)
// The value of a hex digit (0-9, a-f, A-F), or -1.
int hex_value(char c);
// A token or string quoted for a message: 'lv1'.
std::string quote(std::string_view s);
// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t utf8_length(std::string_view s, size_t i);

class Lexer {
 public:
  explicit Lexer(const Source& src);
  const Token& peek() const { return tok_; }
  Token next();

 private:
  void scan();
  void start_line();
  bool line_ends_at(size_t i) const;
  void skip_blanks();
  void emit(Tok kind, size_t off, size_t len);
  void scan_name();
  void scan_number();
  void scan_string();
  [[noreturn]] void bad_char(size_t off) const;

  const Source& src_;
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;                // open brackets
  bool at_line_start_ = true;    // the next token starts a logical line
  bool first_on_line_ = true;    // no token yet on the current physical line
  bool line_has_tokens_ = false;
  std::string_view indent_;
  Token tok_;
};

}  // namespace aj::text
