// The text format's tokenizer and located error messages (see lexer.h).
// Messages are always valid UTF-8 with no control characters, so they can
// cross into Python whatever bytes the text held.
#include "lexer.h"

#include <algorithm>

#include "adjoint/ir/names.h"

namespace aj::text {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";  // UTF-8, skipped at the start

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return hex_value(c) >= 0; }

// The line as shown under an error: invalid UTF-8 and control bytes become
// '?', tabs stay (so the caret lines up) unless keep_tabs is false.
std::string printable_utf8(std::string_view s, bool keep_tabs) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t k = utf8_length(s, i);
      if (k == 0) {
        out += '?';
        ++i;
      } else {
        out.append(s.substr(i, k));
        i += k;
      }
      continue;
    }
    if (c == '\t' || c == '\n' || c == '\r') out += keep_tabs && c == '\t' ? '\t' : ' ';
    else if (c < 0x20 || c == 0x7f) out += '?';
    else out += static_cast<char>(c);
    ++i;
  }
  return out;
}

// Advances i past one code point (an invalid byte counts as one).
size_t next_char(std::string_view s, size_t i) {
  size_t k = static_cast<unsigned char>(s[i]) >= 0x80 ? utf8_length(s, i) : 1;
  return i + (k == 0 ? 1 : k);
}

}  // namespace

size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t j) { return static_cast<unsigned char>(s[j]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t j = 1; j < n; ++j) {
    if ((byte(i + j) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + j) & 0x3f);
  }
  bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
  return overlong || surrogate || cp > 0x10ffff ? 0 : n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string quote(std::string_view s) { return "'" + escape(s) + "'"; }

// ---- Source ----

int Source::line_of(size_t off) const {
  off = std::min(off, text_.size());
  return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + off, '\n'));
}

SourceLoc Source::locate(size_t off) const {
  off = std::min(off, text_.size());
  size_t begin = 0;
  if (off > 0) {
    size_t newline = text_.rfind('\n', off - 1);
    if (newline != std::string_view::npos) begin = newline + 1;
  }
  if (begin == 0 && text_.substr(0, 3) == kByteOrderMark) begin = 3;  // not part of line 1
  off = std::max(off, begin);
  size_t end = text_.find('\n', begin);
  if (end == std::string_view::npos) end = text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;  // at or past it is the end of the line
  int column = 1;
  for (size_t i = begin; i < off && i < end; i = next_char(text_, i)) ++column;
  SourceLoc loc;
  loc.line = line_of(off);
  loc.column = column;
  loc.source_line = printable_utf8(text_.substr(begin, end - begin), true);
  return loc;
}

std::string Source::message(const SourceLoc& loc, std::string_view reason) {
  std::string caret;
  const std::string& line = loc.source_line;
  size_t i = 0;
  for (int c = 1; c < loc.column; ++c) {
    caret += i < line.size() && line[i] == '\t' ? '\t' : ' ';
    if (i < line.size()) i = next_char(line, i);
  }
  caret += '^';
  return str(loc.line, ":", loc.column, ": ", printable_utf8(reason, false), "\n", line, "\n",
             caret);
}

// ---- Lexer ----

Lexer::Lexer(const Source& src) : src_(src), s_(src.text()) {
  if (s_.substr(0, 3) == kByteOrderMark) pos_ = 3;
  scan();
}

Token Lexer::next() {
  Token t = tok_;
  scan();
  return t;
}

void Lexer::emit(Tok kind, size_t off, size_t len) {
  bool real = kind != Tok::kNewline && kind != Tok::kEnd;
  tok_ = Token{kind, real && at_line_start_, real && first_on_line_, off, len, indent_};
  if (!real) return;
  at_line_start_ = false;
  first_on_line_ = false;
  line_has_tokens_ = true;
}

// At the start of a logical line: skips blank and comment-only lines and
// records the indentation of the first line holding a token.
void Lexer::start_line() {
  while (pos_ < s_.size()) {
    size_t begin = pos_;
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    indent_ = s_.substr(begin, pos_ - begin);
    if (pos_ < s_.size() && s_[pos_] == '#')
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '\r' && line_ends_at(pos_)) ++pos_;
    if (pos_ >= s_.size() || s_[pos_] != '\n') return;
    ++pos_;
  }
}

// Whether the line ends at byte i: the end of the text, '\n', or the '\r' of
// "\r\n" (or of a last line).
bool Lexer::line_ends_at(size_t i) const {
  if (i >= s_.size() || s_[i] == '\n') return true;
  return s_[i] == '\r' && (i + 1 == s_.size() || s_[i + 1] == '\n');
}

// Spaces, tabs, comments, and a '\r' ending a line.
void Lexer::skip_blanks() {
  while (pos_ < s_.size()) {
    char c = s_[pos_];
    if (c == ' ' || c == '\t') {
      ++pos_;
    } else if (c == '\r' && line_ends_at(pos_)) {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

void Lexer::scan() {
  for (;;) {
    if (at_line_start_ && !line_has_tokens_ && depth_ == 0) start_line();
    skip_blanks();
    if (pos_ >= s_.size()) {
      if (line_has_tokens_) {
        emit(Tok::kNewline, s_.size(), 0);
        line_has_tokens_ = false;
        at_line_start_ = true;
      } else {
        emit(Tok::kEnd, s_.size(), 0);
      }
      return;
    }
    char c = s_[pos_];
    if (c == '\n') {
      first_on_line_ = true;
      if (depth_ > 0 || !line_has_tokens_) {
        ++pos_;
        continue;
      }
      emit(Tok::kNewline, pos_++, 1);
      line_has_tokens_ = false;
      at_line_start_ = true;
      return;
    }
    size_t at = pos_;
    switch (c) {
      case '(': ++depth_; ++pos_; return emit(Tok::kLParen, at, 1);
      case '[': ++depth_; ++pos_; return emit(Tok::kLBracket, at, 1);
      case ')': depth_ = std::max(0, depth_ - 1); ++pos_; return emit(Tok::kRParen, at, 1);
      case ']': depth_ = std::max(0, depth_ - 1); ++pos_; return emit(Tok::kRBracket, at, 1);
      case ',': ++pos_; return emit(Tok::kComma, at, 1);
      case ':': ++pos_; return emit(Tok::kColon, at, 1);
      case '=': ++pos_; return emit(Tok::kEqual, at, 1);
      case '@': ++pos_; return emit(Tok::kAt, at, 1);
      case '-':
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
          pos_ += 2;
          return emit(Tok::kArrow, at, 2);
        }
        ++pos_;
        return emit(Tok::kMinus, at, 1);
      case '"': case '\'': return scan_string();
      default: break;
    }
    if (is_digit(c) || (c == '.' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1])))
      return scan_number();
    if (is_name_start(c)) return scan_name();
    bad_char(pos_);
  }
}

void Lexer::scan_name() {
  size_t start = pos_;
  while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
  emit(Tok::kName, start, pos_ - start);
}

// digits ['.' digits] [('e'|'E') ['+'|'-'] digits], or '.' digits ..., or
// a hex int 0x<hex digits> (the printer writes NaN payloads so).
void Lexer::scan_number() {
  size_t start = pos_;
  if (s_.compare(pos_, 2, "0x") == 0 || s_.compare(pos_, 2, "0X") == 0) {
    pos_ += 2;
    size_t from = pos_;
    while (pos_ < s_.size() && is_hex(s_[pos_])) ++pos_;
    if (pos_ == from || (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '.'))) {
      while (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '.')) ++pos_;
      src_.fail(start, "bad number literal " + quote(s_.substr(start, pos_ - start)));
    }
    emit(Tok::kInt, start, pos_ - start);
    return;
  }
  bool is_float = false;
  auto digits = [&] {
    size_t from = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    return pos_ > from;
  };
  auto at = [&](char a, char b) { return pos_ < s_.size() && (s_[pos_] == a || s_[pos_] == b); };
  digits();
  if (at('.', '.')) {
    is_float = true;
    ++pos_;
    digits();
  }
  bool ok = true;
  if (at('e', 'E')) {
    is_float = true;
    ++pos_;
    if (at('+', '-')) ++pos_;
    ok = digits();
  }
  if (!ok || (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '.'))) {
    while (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '.')) ++pos_;
    src_.fail(start, "bad number literal " + quote(s_.substr(start, pos_ - start)));
  }
  emit(is_float ? Tok::kFloat : Tok::kInt, start, pos_ - start);
}

// A quoted string on one line; escapes \\ \' \" \n \t and \xNN (the code
// point U+00NN); valid UTF-8, no control characters. The token spans the
// quotes; the parser decodes it.
void Lexer::scan_string() {
  size_t start = pos_;
  char q = s_[pos_++];
  for (;;) {
    if (line_ends_at(pos_)) src_.fail(start, "unterminated string");
    char c = s_[pos_];
    unsigned char u = static_cast<unsigned char>(c);
    if (c == q) {
      ++pos_;
      break;
    }
    if (c == '\\') {
      if (line_ends_at(pos_ + 1)) src_.fail(start, "unterminated string");
      char e = s_[pos_ + 1];
      if (e == 'x') {  // \xNN: two hex digits
        bool ok = pos_ + 3 < s_.size() && is_hex(s_[pos_ + 2]) && is_hex(s_[pos_ + 3]);
        if (!ok) src_.fail(pos_, "\\x in a string needs two hex digits, like \\x0a");
        pos_ += 4;
        continue;
      }
      if (e != '\\' && e != '\'' && e != '"' && e != 'n' && e != 't')
        src_.fail(pos_, "unsupported escape " + quote(s_.substr(pos_, 2)) + " in string");
      pos_ += 2;
    } else if (u >= 0x80) {
      size_t k = utf8_length(s_, pos_);
      if (k == 0) src_.fail(pos_, "invalid UTF-8 byte " + quote(s_.substr(pos_, 1)) + " in string");
      pos_ += k;
    } else if ((u < 0x20 && c != '\t') || u == 0x7f) {
      src_.fail(pos_, "control character " + quote(s_.substr(pos_, 1)) + " in string");
    } else {
      ++pos_;
    }
  }
  emit(Tok::kString, start, pos_ - start);
}

[[noreturn]] void Lexer::bad_char(size_t off) const {
  size_t k = static_cast<unsigned char>(s_[off]) >= 0x80 ? utf8_length(s_, off) : 1;
  std::string_view ch = s_.substr(off, k == 0 ? 1 : k);
  std::string hint;
  if (ch == "+" || ch == "*" || ch == "/")
    hint = " (operators are written as calls: add(x, y); symbolic dims are strings: \"2*n\")";
  if (ch == "\\") hint = " (line continuations are not supported; break lines inside brackets)";
  if (ch == "." && off > 0 && is_name_char(s_[off - 1]))
    hint = " (names hold no dots: an op is called without a prefix such as TVM's 'R.' or 'relax.', as exp(x))";
  src_.fail(off, "unexpected character " + quote(ch) + hint);
}

}  // namespace aj::text
