// The first phase of parsing: tokens to a function's syntax tree (see
// syntax.h for the grammar). Syntax errors inside brackets that surface on a
// later line report the unclosed bracket instead, as Python does.
#include "syntax.h"

#include <algorithm>
#include <optional>

#include "adjoint/ir/names.h"
#include "literals.h"

namespace aj::text {
namespace {

using Key = std::pair<std::string_view, size_t>;  // a keyword and where it is written

// The first repeated keyword, in text order, if any. O(k log k), so a call
// with very many keywords stays fast.
std::optional<Key> first_repeat(std::vector<Key> keys) {
  std::sort(keys.begin(), keys.end());
  std::optional<Key> first;
  for (size_t i = 1; i < keys.size(); ++i)
    if (keys[i].first == keys[i - 1].first && (!first || keys[i].second < first->second))
      first = keys[i];
  return first;
}

// Appends the code point `cp` (below U+0100) in UTF-8.
void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
    return;
  }
  out += static_cast<char>(0xc0 | (cp >> 6));
  out += static_cast<char>(0x80 | (cp & 0x3f));
}

std::string describe_indent(std::string_view s) {
  size_t tabs = static_cast<size_t>(std::count(s.begin(), s.end(), '\t'));
  if (tabs == 0) return str(s.size(), " space(s)");
  if (tabs == s.size()) return str(tabs, " tab(s)");
  return str(s.size() - tabs, " space(s) and ", tabs, " tab(s)");
}

}  // namespace

// One level of nesting, held while a bracket, call or constant list is
// read: more than kMaxNesting open at once (with the chains of [i] around
// them) is a ParseError at the one that goes too deep.
class SyntaxParser::Nest {
 public:
  Nest(SyntaxParser& p, size_t off) : p_(p) {
    if (++p_.depth_ > kMaxNesting)
      p_.src_.fail(off, str("nesting deeper than ", kMaxNesting, " levels"));
  }
  ~Nest() { --p_.depth_; }
  Nest(const Nest&) = delete;
  Nest& operator=(const Nest&) = delete;

 private:
  SyntaxParser& p_;
};

// ---- tokens and errors ----

std::string SyntaxParser::describe(const Token& t) const {
  switch (t.kind) {
    case Tok::kEnd: return "end of text";
    case Tok::kNewline: return "end of line";
    default: return quote(src_.view(t));
  }
}

void SyntaxParser::syntax_error(const Token& at, std::string_view reason) const {
  if (!open_.empty()) {
    const Token& o = open_.back();
    bool later = at.kind == Tok::kEnd || at.kind == Tok::kNewline ||
                 src_.text().substr(o.off, at.off - o.off).find('\n') != std::string_view::npos;
    if (later) src_.fail(o.off, str(quote(src_.view(o)), " was never closed"));
  }
  src_.fail(at.off, reason);
}

Token SyntaxParser::expect(Tok kind, std::string_view what) {
  if (lex_.peek().kind != kind)
    syntax_error(lex_.peek(), str("expected ", what, ", got ", describe(lex_.peek())));
  return lex_.next();
}

Token SyntaxParser::expect_name(std::string_view what) {
  Token t = expect(Tok::kName, what);
  std::string_view name = src_.view(t);
  if (is_python_keyword(name))
    src_.fail(t.off, str(quote(name), " is a Python keyword and cannot be ", what));
  return t;
}

void SyntaxParser::open(const Token& t) { open_.push_back(t); }

void SyntaxParser::close(Tok kind) {
  expect(kind, kind == Tok::kRParen ? "')'" : "']'");
  open_.pop_back();
}

// Items separated by commas (a trailing comma allowed) up to `close`; the
// opening bracket is already consumed and pushed by open().
template <typename F>
void SyntaxParser::comma_list(Tok close_kind, F&& item) {
  const char* closer = close_kind == Tok::kRParen ? "')'" : "']'";
  while (lex_.peek().kind != close_kind) {
    item();
    if (lex_.peek().kind == Tok::kComma) {
      lex_.next();
    } else if (lex_.peek().kind != close_kind) {
      syntax_error(lex_.peek(), str("expected ',' or ", closer, ", got ", describe(lex_.peek())));
    }
  }
  close(close_kind);
}

void SyntaxParser::end_of_line(std::string_view after) {
  const Token& t = lex_.peek();
  if (t.kind == Tok::kNewline) lex_.next();
  else if (t.kind != Tok::kEnd)
    syntax_error(t, str("expected end of line after ", after, ", got ", describe(t)));
}

void SyntaxParser::check_indent(const Token& t, std::string_view body) const {
  std::string_view in = t.indent;
  if (in == body) return;
  if (in.size() > body.size() && in.substr(0, body.size()) == body)
    src_.fail(t.off, "unexpected indent");
  src_.fail(t.off, str("indentation (", describe_indent(in),
                       ") does not match the function body's (", describe_indent(body), ")"));
}

// A string token's text, its escapes decoded: \xNN is the code point U+00NN
// (as in Python: "\xe9" is "é"), written in UTF-8 like the rest.
std::string_view SyntaxParser::string_value(const Token& t) {
  std::string_view inner = src_.view(t).substr(1, t.len - 2);
  if (inner.find('\\') == std::string_view::npos) return inner;
  auto out = std::make_unique<std::string>();
  for (size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c != '\\') {
      *out += c;
      continue;
    }
    c = inner[++i];  // the lexer checked every escape
    if (c == 'x') {
      append_utf8(*out, static_cast<unsigned>(hex_value(inner[i + 1]) * 16 + hex_value(inner[i + 2])));
      i += 2;
    } else {
      *out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
  }
  decoded_.push_back(std::move(out));
  return *decoded_.back();
}

// ---- functions ----

FunctionSyntax SyntaxParser::header() {
  FunctionSyntax fn;
  WeightAttrOffsets offs = decorator(fn);
  signature(fn);
  check_weight_attrs(fn, offs);
  begin_body(fn);
  return fn;
}

// num_input, when given, must be an int from 0 to the number of params;
// frozen's names must be weights (frozen_attr_problem).
void SyntaxParser::check_weight_attrs(const FunctionSyntax& fn, WeightAttrOffsets offs) const {
  int64_t num_input = -1;
  for (const auto& [key, v] : fn.attrs) {
    if (key != "num_input") continue;
    const int64_t* n = std::get_if<int64_t>(&v);
    if (!n || *n < 0 || static_cast<size_t>(*n) > fn.params.size())
      src_.fail(offs.num_input, str("num_input must be an int from 0 to ", fn.params.size(),
                                    " (the number of params), got ", attr_to_string(v)));
    num_input = *n;
  }
  for (const auto& [key, v] : fn.attrs) {
    if (key != "frozen") continue;
    std::vector<std::string_view> params;
    for (const ParamSyntax& p : fn.params) params.push_back(p.name);
    if (std::string problem = frozen_attr_problem(std::get<std::string>(v), params, num_input); !problem.empty())
      src_.fail(offs.frozen, "frozen " + problem);
  }
}

// '@function' ['(' key=literal, ... ')'] NEWLINE; returns where the values
// of num_input and frozen are.
SyntaxParser::WeightAttrOffsets SyntaxParser::decorator(FunctionSyntax& fn) {
  const Token& t = lex_.peek();
  if (!t.indent.empty()) src_.fail(t.off, "unexpected indent");
  if (t.kind == Tok::kName && src_.view(t) == "def")
    syntax_error(t, "expected '@function' before 'def'");
  expect(Tok::kAt, "'@function'");
  Token name = expect(Tok::kName, "'function' after '@'");
  if (src_.view(name) != "function")
    src_.fail(name.off, str("unknown decorator '@", src_.view(name), "' (expected @function)"));
  WeightAttrOffsets offs;
  std::vector<Key> keys;
  if (lex_.peek().kind == Tok::kLParen) {
    open(lex_.next());
    comma_list(Tok::kRParen, [&] {
      Token key = expect_name("a function attr name");
      expect(Tok::kEqual, "'=' (function attrs are keywords: @function(num_input=1))");
      std::string_view k = src_.view(key);
      Node v = expr();
      AttrValue value = attr_value(src_, v);
      if (k == "num_input") offs.num_input = v.off;  // checked against the params once they are read
      else if (std::string problem = func_attr_problem(std::string(k), value); !problem.empty())
        src_.fail(is_known_func_attr(k) ? v.off : key.off, problem);
      if (k == "frozen") offs.frozen = v.off;
      keys.emplace_back(k, key.off);
      fn.attrs.emplace_back(std::string(k), std::move(value));
    });
  }
  if (auto dup = first_repeat(std::move(keys)))
    src_.fail(dup->second, str("function attr '", dup->first, "' given twice"));
  end_of_line("the decorator");
  return offs;
}

// 'def' NAME '(' params ')' ['->' type] ':' NEWLINE
void SyntaxParser::signature(FunctionSyntax& fn) {
  const Token& d = lex_.peek();
  if (d.kind != Tok::kName || src_.view(d) != "def")
    syntax_error(d, str("expected 'def' after the decorator, got ", describe(d)));
  if (!d.indent.empty()) src_.fail(d.off, "unexpected indent");
  lex_.next();
  Token name = expect_name("a function name");
  fn.name = src_.view(name);
  fn.off = name.off;
  open(expect(Tok::kLParen, "'(' after the function name"));
  comma_list(Tok::kRParen, [&] {
    Token p = expect_name("a param name");
    if (lex_.peek().kind != Tok::kColon)
      src_.fail(p.off, str("param '", src_.view(p), "' needs a type annotation, like ",
                           src_.view(p), ": Tensor((3,), \"float32\")"));
    lex_.next();
    fn.params.push_back(ParamSyntax{src_.view(p), p.off, type()});
    if (lex_.peek().kind == Tok::kEqual)
      src_.fail(lex_.peek().off, "params cannot have default values");
  });
  if (lex_.peek().kind == Tok::kArrow) {
    lex_.next();
    fn.ret_type = type();
  }
  expect(Tok::kColon, "':' at the end of the def line");
  const Token& t = lex_.peek();
  if (t.kind != Tok::kNewline && t.kind != Tok::kEnd)
    syntax_error(t, str("expected a new line after ':' (the body goes on indented lines), got ",
                        describe(t)));
  end_of_line("':'");
}

void SyntaxParser::begin_body(const FunctionSyntax& fn) {
  const Token& first = lex_.peek();
  if (first.kind == Tok::kEnd || first.indent.empty())
    src_.fail(first.off, str("expected an indented body for function '", fn.name, "'"));
  body_indent_ = first.indent;
}

bool SyntaxParser::statement(FunctionSyntax& fn, BindingSyntax& b) {
  const Token& t = lex_.peek();
  if (t.kind == Tok::kEnd || t.indent.empty())
    src_.fail(fn.off, str("function '", fn.name, "' has no return statement"));
  check_indent(t, body_indent_);
  if (!(t.kind == Tok::kName && src_.view(t) == "return")) {
    binding(b);
    return true;
  }
  lex_.next();
  fn.ret_off = lex_.peek().off;
  if (lex_.peek().kind == Tok::kNewline || lex_.peek().kind == Tok::kEnd)
    src_.fail(fn.ret_off, "'return' needs a value");
  fn.ret = exprs();
  end_of_line("the returned value");
  const Token& after = lex_.peek();
  if (after.kind != Tok::kEnd && !after.indent.empty()) {
    check_indent(after, body_indent_);
    src_.fail(after.off, str("statement after 'return' in function '", fn.name, "'"));
  }
  return false;
}

// NAME [':' type] '=' exprs NEWLINE
void SyntaxParser::binding(BindingSyntax& b) {
  const Token& t = lex_.peek();
  if (t.kind != Tok::kName)
    syntax_error(t, str("expected a binding like 'lv1 = add(x, y)' or 'return', got ",
                        describe(t)));
  Token name = expect_name("a var name");
  b.name = src_.view(name);
  b.off = name.off;
  b.annotation = nullptr;
  b.annotation_off = 0;
  if (lex_.peek().kind == Tok::kColon) {
    lex_.next();
    b.annotation_off = lex_.peek().off;
    b.annotation = type();
  } else if (lex_.peek().kind == Tok::kComma) {
    src_.fail(lex_.peek().off, "tuple unpacking is not supported; bind the tuple and index it: "
                               "t = split(x, 2); a = t[0]");
  }
  expect(Tok::kEqual, b.annotation ? "'=' after the annotation" : "':' or '=' after the var name");
  b.value = exprs();
  end_of_line("the binding");
}

// ---- expressions ----

// expr (',' expr)* [','] up to the end of the line; several make a tuple.
Node SyntaxParser::exprs() {
  Node first = expr();
  if (lex_.peek().kind != Tok::kComma) return first;
  Node tuple;
  tuple.kind = NodeKind::kTuple;
  tuple.off = first.off;
  tuple.items.push_back(std::move(first));
  while (lex_.peek().kind == Tok::kComma) {
    lex_.next();
    Tok k = lex_.peek().kind;
    if (k == Tok::kNewline || k == Tok::kEnd) break;
    tuple.items.push_back(expr());
  }
  return tuple;
}

Node SyntaxParser::expr() {
  Node n = primary();
  int chain = 0;
  while (lex_.peek().kind == Tok::kLBracket) {
    Token lb = lex_.next();
    if (depth_ + ++chain > kMaxNesting)
      src_.fail(lb.off, str("nesting deeper than ", kMaxNesting, " levels"));
    open(lb);
    n = index(std::move(n), lb);
  }
  return n;
}

// The '[' ['-'] INT ']' after an expr; the '[' is consumed.
Node SyntaxParser::index(Node base, const Token& lb) {
  bool negative = lex_.peek().kind == Tok::kMinus;
  if (negative) lex_.next();
  const Token& t = lex_.peek();
  if (t.kind != Tok::kInt)
    syntax_error(t, str("expected an integer tuple index, got ", describe(t)));
  std::string_view digits = src_.view(t);
  uint64_t v = 0;
  if (!parse_u64(digits, v) || v > (1u << 30))
    src_.fail(t.off, str("tuple index ", digits, " is too large"));
  lex_.next();
  close(Tok::kRBracket);
  Node n;
  n.kind = NodeKind::kIndex;
  n.off = lb.off;
  n.index = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  n.items.push_back(std::move(base));
  return n;
}

Node SyntaxParser::primary() {
  Token t = lex_.peek();
  Node n;
  n.off = t.off;
  switch (t.kind) {
    case Tok::kName: {
      lex_.next();
      n.text = src_.view(t);
      if (n.text == "nan" && lex_.peek().kind == Tok::kLParen) {
        n.kind = NodeKind::kFloat;
        n.text = float_name_text(t);
        return n;
      }
      if (lex_.peek().kind == Tok::kLParen) return n.text == "const" ? constant(t) : call(t);
      if (n.text == "True" || n.text == "False") {
        n.kind = NodeKind::kBool;
        n.truth = n.text == "True";
      } else if (n.text == "None") {
        n.kind = NodeKind::kNone;
      }
      return n;
    }
    case Tok::kInt:
    case Tok::kFloat:
      lex_.next();
      n.kind = t.kind == Tok::kInt ? NodeKind::kInt : NodeKind::kFloat;
      n.text = src_.view(t);
      return n;
    case Tok::kString:
      lex_.next();
      n.kind = NodeKind::kString;
      n.text = string_value(t);
      return n;
    case Tok::kMinus:
      return negative_number(lex_.next());
    case Tok::kLParen: {
      Nest nest(*this, t.off);
      open(lex_.next());
      bool comma = false;
      n.kind = NodeKind::kTuple;
      comma_list(Tok::kRParen, [&] {
        n.items.push_back(expr());
        comma = comma || lex_.peek().kind == Tok::kComma;
      });
      if (n.items.size() == 1 && !comma) return std::move(n.items[0]);
      return n;
    }
    case Tok::kLBracket: {
      Nest nest(*this, t.off);
      open(lex_.next());
      n.kind = NodeKind::kList;
      comma_list(Tok::kRBracket, [&] { n.items.push_back(expr()); });
      return n;
    }
    default:
      syntax_error(t, str("expected an expression, got ", describe(t)));
  }
}

// The text of an inf or nan just read: "inf", "nan", or "nan(0x...)" with
// the NaN's payload (the bits of its significand), which consumes the
// parenthesized int after the name.
std::string_view SyntaxParser::float_name_text(const Token& name) {
  std::string_view text = src_.view(name);
  if (text != "nan" || lex_.peek().kind != Tok::kLParen) return text;
  lex_.next();
  expect(Tok::kInt, "a NaN payload (an int, like nan(0x1))");
  Token rp = expect(Tok::kRParen, "')' after the NaN payload");
  return src_.text().substr(name.off, rp.off + rp.len - name.off);
}

// '-' followed by a number, inf or nan.
Node SyntaxParser::negative_number(const Token& minus) {
  Token t = lex_.peek();
  std::string_view text = src_.view(t);
  bool float_name = t.kind == Tok::kName && (text == "inf" || text == "nan");
  if (t.kind != Tok::kInt && t.kind != Tok::kFloat && !float_name)
    syntax_error(t, str("expected a number after '-', got ", describe(t)));
  lex_.next();
  Node n;
  n.kind = t.kind == Tok::kInt ? NodeKind::kInt : NodeKind::kFloat;
  n.negative = true;
  n.off = minus.off;
  n.text = float_name ? float_name_text(t) : text;
  return n;
}

// NAME '(' [arg (',' arg)*] ')' with arg := [NAME '='] expr.
Node SyntaxParser::call(const Token& callee) {
  Nest nest(*this, callee.off);
  Node n;
  n.kind = NodeKind::kCall;
  n.off = callee.off;
  n.text = src_.view(callee);
  open(lex_.next());
  std::vector<Key> keys;
  comma_list(Tok::kRParen, [&] {
    Node a = expr();
    if (lex_.peek().kind == Tok::kEqual && a.kind == NodeKind::kName) {
      lex_.next();
      Node v = expr();
      v.key = a.text;
      v.key_off = a.off;
      keys.emplace_back(a.text, a.off);
      n.items.push_back(std::move(v));
      return;
    }
    if (!keys.empty()) src_.fail(a.off, "positional argument follows keyword argument");
    n.items.push_back(std::move(a));
  });
  if (auto dup = first_repeat(std::move(keys)))
    src_.fail(dup->second, str("keyword argument '", dup->first, "' repeated"));
  return n;
}

// const(value, "dtype"): the value a number or a nested list of numbers.
Node SyntaxParser::constant(const Token& callee) {
  Nest nest(*this, callee.off);
  open(lex_.next());
  ConstShape cs;
  const_value(0, cs);
  expect(Tok::kComma, "',' and a dtype: const(1.0, \"float32\")");
  if (lex_.peek().kind == Tok::kName && src_.view(lex_.peek()) == "dtype") {
    lex_.next();
    expect(Tok::kEqual, "'=' after 'dtype'");
  }
  Node dtype = expr();
  std::vector<int64_t> shape = cs.shape;
  if (lex_.peek().kind == Tok::kComma) {
    lex_.next();
    const Token& k = lex_.peek();
    if (k.kind == Tok::kName && src_.view(k) == "shape") {
      lex_.next();
      expect(Tok::kEqual, "'=' after 'shape'");
      shape = explicit_const_shape(expr(), cs.shape);
      if (lex_.peek().kind == Tok::kComma) lex_.next();
    }
  }
  close(Tok::kRParen);
  Node n;
  n.kind = NodeKind::kConst;
  n.off = callee.off;
  n.constant = make_constant(src_, shape, cs.leaves, dtype_from_node(src_, dtype));
  return n;
}

// const(..., shape=(...)): the shape of an empty constant, whose nested
// lists stop at the first zero dim ([] for (0, 3)). The lists must agree
// with it as far as they go.
std::vector<int64_t> SyntaxParser::explicit_const_shape(const Node& n, const std::vector<int64_t>& listed) {
  AttrValue v = attr_value(src_, n);
  const Shape* dims = std::get_if<Shape>(&v);
  if (!dims) src_.fail(n.off, "shape= of a constant must be a tuple of ints, like shape=(0, 3)");
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (const Dim& d : *dims) {
    if (!d.is_const() || d.value() < 0)
      src_.fail(n.off, "shape= of a constant must hold non-negative ints, got " + shape_to_string(*dims));
    if (d.value() > 0 && __builtin_mul_overflow(elements, d.value(), &elements))
      src_.fail(n.off, "shape= of a constant is too large: " + shape_to_string(*dims));
    shape.push_back(d.value());
  }
  bool prefix = listed.size() <= shape.size() && std::equal(listed.begin(), listed.end(), shape.begin());
  bool empty = !listed.empty() && listed.back() == 0;
  if (shape != listed && !(prefix && empty))
    src_.fail(n.off, "shape= " + shape_to_string(*dims) + " does not match the value's nested lists");
  return shape;
}

// One element of a constant at nesting `level`: a scalar or a nested list.
// All lists at one level must have the same length and all scalars must sit
// at the same level (else the list is ragged).
void SyntaxParser::const_value(size_t level, ConstShape& cs) {
  Token t = lex_.peek();
  if (t.kind != Tok::kLBracket) {
    const_leaf(level, cs);
    return;
  }
  Nest nest(*this, t.off);
  if (cs.rank >= 0 && static_cast<int>(level) >= cs.rank)
    src_.fail(t.off, "ragged nested list: a list where a number was expected");
  open(lex_.next());
  if (cs.shape.size() == level) cs.shape.push_back(-1);
  int64_t count = 0;
  comma_list(Tok::kRBracket, [&] {
    const_value(level + 1, cs);
    ++count;
  });
  if (cs.shape[level] < 0) cs.shape[level] = count;
  else if (cs.shape[level] != count)
    src_.fail(t.off, str("ragged nested list: ", count, " element(s) where the others at this ",
                         "depth have ", cs.shape[level]));
}

void SyntaxParser::const_leaf(size_t level, ConstShape& cs) {
  Token t = lex_.peek();
  bool deeper_lists = cs.rank < 0 ? cs.shape.size() != level : cs.rank != static_cast<int>(level);
  if (deeper_lists) src_.fail(t.off, "ragged nested list: a number where a list was expected");
  cs.rank = static_cast<int>(level);
  std::string_view text = src_.view(t);
  ConstLeaf leaf{NodeKind::kInt, false, false, t.off, text};
  if (t.kind == Tok::kMinus) {
    Node n = negative_number(lex_.next());
    leaf = ConstLeaf{n.kind, true, false, n.off, n.text};
  } else if (t.kind == Tok::kInt || t.kind == Tok::kFloat) {
    leaf.kind = t.kind == Tok::kInt ? NodeKind::kInt : NodeKind::kFloat;
    lex_.next();
  } else if (t.kind == Tok::kName && (text == "inf" || text == "nan")) {
    leaf.kind = NodeKind::kFloat;
    leaf.text = float_name_text(lex_.next());
  } else if (t.kind == Tok::kName && (text == "True" || text == "False")) {
    leaf.kind = NodeKind::kBool;
    leaf.truth = text == "True";
    lex_.next();
  } else {
    syntax_error(t, str("expected a number, True, False or a nested list in const, got ",
                        describe(t)));
  }
  cs.leaves.push_back(leaf);
}

Type SyntaxParser::type() { return type_from_node(src_, expr()); }

}  // namespace aj::text
