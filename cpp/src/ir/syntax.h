// The syntax tree of the text format: the first phase of parsing. The parser
// reads a function's header (decorator, signature) and then its body one
// statement at a time, so the second phase (parser.cc) lowers each binding
// while its syntax is still in cache and never holds a whole function's tree;
// it reads ahead only when it needs names bound later (to generate names for
// nested calls, or to explain a use before a binding). Types, constants and
// literals, which need no scope, are converted here; expressions stay as
// Nodes. Internal to cpp/src/ir.
//
// Grammar (Python syntax; newlines inside brackets are joined):
//   module    := function*
//   function  := '@' 'function' ['(' [NAME '=' literal (',' ...)*] ')'] NEWLINE
//                'def' NAME '(' [param (',' param)*] ')' ['->' type] ':' NEWLINE
//                INDENT (binding NEWLINE)* 'return' exprs NEWLINE
//   param     := NAME ':' type
//   binding   := NAME [':' type] '=' exprs
//   exprs     := expr (',' expr)* [',']          (several: a tuple)
//   expr      := primary ('[' ['-'] INT ']')*
//   primary   := NAME | NAME '(' args ')' | 'const' '(' value ',' STRING ')'
//              | literal | '(' ')' | '(' expr ')' | '(' expr ',' ... ')' | '[' ... ']'
//   args      := [arg (',' arg)* [',']]          arg := [NAME '='] expr
//   literal   := ['-'] (INT | FLOAT | 'inf' | 'nan') | STRING | True | False | None
//   type      := 'Tensor' '(' shape ',' STRING ')' | 'Tuple' '(' [type (',' type)*] ')'
//   shape     := '(' [(INT | STRING) (',' ...)*] ')'   (strings are symbolic dims,
//                read by Dim::parse: the grammar in dim_parse.cc)
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "adjoint/ir/function.h"
#include "lexer.h"

namespace aj::text {

// Brackets, calls and chains of [i] nest up to this many levels; one more
// is a ParseError. Not to be lowered: deep tuple types must still parse
// as the printer writes them.
constexpr int kMaxNesting = 256;
// The deepest tuple type's annotation, Tuple(...Tuple(Tensor((3,), ...))),
// nests one level per tuple, then the Tensor call, its shape and a dim.
static_assert(kMaxTupleDepth + 3 == kMaxNesting, "every type must print as text that parses back");

enum class NodeKind : uint8_t {
  kName, kInt, kFloat, kString, kBool, kNone,  // leaves
  kCall, kTuple, kList, kIndex, kConst,        // compound
};

struct Node {
  NodeKind kind = NodeKind::kName;
  bool negative = false;    // numbers: written with a leading '-'
  bool truth = false;       // kBool
  size_t off = 0;           // first byte (a call's callee name)
  std::string_view text;    // name, callee, number text or decoded string
  std::string_view key;     // the keyword of a keyword argument
  size_t key_off = 0;
  int64_t index = 0;        // kIndex
  std::vector<Node> items;  // call args, tuple or list fields; kIndex: the indexed expr
  Expr constant;            // kConst

  bool is_literal() const { return kind <= NodeKind::kNone && kind != NodeKind::kName; }
  // 'inf' and 'nan' read as floats where a literal is expected.
  bool is_float_name() const { return kind == NodeKind::kName && (text == "inf" || text == "nan"); }
};

struct ParamSyntax {
  std::string_view name;
  size_t off = 0;
  Type type;
};

struct BindingSyntax {
  std::string_view name;
  size_t off = 0;
  Type annotation;  // null when absent
  size_t annotation_off = 0;
  Node value;
};

// A function's header; its return is filled in when the body's last
// statement has been read.
struct FunctionSyntax {
  std::string_view name;
  size_t off = 0;
  FuncAttrs attrs;
  std::vector<ParamSyntax> params;
  Type ret_type;  // null when absent
  Node ret;
  size_t ret_off = 0;
};

// A scalar leaf of a constant: a number, inf/nan, True/False.
struct ConstLeaf {
  NodeKind kind;
  bool negative;
  bool truth;
  size_t off;
  std::string_view text;
};

// Reads functions one at a time from a token stream.
class SyntaxParser {
 public:
  explicit SyntaxParser(const Source& src) : src_(src), lex_(src) {}
  bool at_end() const { return lex_.peek().kind == Tok::kEnd; }
  // The decorator and signature of the next function, up to its body.
  FunctionSyntax header();
  // The next statement of the body of `fn` (the last header read): a binding,
  // read into `b`, returns true; the return, read into fn.ret, returns false
  // once the body has ended.
  bool statement(FunctionSyntax& fn, BindingSyntax& b);

 private:
  class Nest;  // RAII nesting depth guard
  struct ConstShape {
    std::vector<int64_t> shape;  // -1 while the first list of a level is open
    std::vector<ConstLeaf> leaves;
    int rank = -1;  // the level of the scalars, once one is seen
  };

  // Where the values of the attrs checked against the params are.
  struct WeightAttrOffsets {
    size_t num_input = 0, frozen = 0;
  };
  WeightAttrOffsets decorator(FunctionSyntax& fn);
  void signature(FunctionSyntax& fn);
  void check_weight_attrs(const FunctionSyntax& fn, WeightAttrOffsets offs) const;
  void begin_body(const FunctionSyntax& fn);
  void binding(BindingSyntax& b);
  Node exprs();
  Node expr();
  Node primary();
  Node index(Node base, const Token& lb);
  Node negative_number(const Token& minus);
  std::string_view float_name_text(const Token& name);
  Node call(const Token& callee);
  Node constant(const Token& callee);
  std::vector<int64_t> explicit_const_shape(const Node& n, const std::vector<int64_t>& listed);
  void const_value(size_t level, ConstShape& cs);
  void const_leaf(size_t level, ConstShape& cs);
  Type type();

  template <typename F>
  void comma_list(Tok close_kind, F&& item);
  Token expect(Tok kind, std::string_view what);
  Token expect_name(std::string_view what);
  void open(const Token& t);
  void close(Tok kind);
  void end_of_line(std::string_view after);
  void check_indent(const Token& t, std::string_view body) const;
  std::string_view string_value(const Token& t);
  [[noreturn]] void syntax_error(const Token& at, std::string_view reason) const;
  std::string describe(const Token& t) const;

  const Source& src_;
  Lexer lex_;
  std::vector<Token> open_;  // unclosed brackets, innermost last
  int depth_ = 0;  // brackets, calls and constant lists open (see Nest)
  std::string_view body_indent_;  // of the body being read
  std::vector<std::unique_ptr<std::string>> decoded_;  // strings that had escapes
};

}  // namespace aj::text
