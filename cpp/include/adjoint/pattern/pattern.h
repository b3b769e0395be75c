// Patterns over the IR (DESIGN.md §5): immutable trees of shared nodes that
// describe what a value looks like (a call of an op with patterns for its
// args, a tuple, a constant, ...). pattern/match.h matches them against
// exprs, looking through var bindings; pattern/rule.h pairs them with
// replacements. The vocabulary:
//
//   wildcard()                       any expr
//   is_op(ops::matmul)({a, b})       a call of matmul whose args match a, b
//   is_op(ops::sum)({x}, {{"keepdims", true}})   ... whose attrs are these
//   is_const(), is_var()             a constant; a var bound to nothing (a param)
//   is_tuple({a, b}), is_tuple_get_item(t, 0)
//   repeated(p)                      a run of tuple fields or call args, each
//                                    matching p, of any length
//   p | q, p & q, ~p                 either (the first that matches), both, not
//   p.has_dtype(d), p.has_shape(s), p.has_attr(attrs)
//   p.where("name", predicate)       a side condition on the matched value
//   p.named("x")                     capture what p matched under "x"
//
// A name used twice in one pattern requires equal values in both places
// (vars by identity, constants by value); two runs of the same name require
// the same values, two runs of the same count name the same length. Names
// inside a run capture one value per element. A pattern given wrong
// arguments (an unknown op, an attr its op lacks, a run where one value is
// wanted) is an aj::Error naming it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/expr.h"
#include "adjoint/op/ops.h"

namespace aj {

enum class PatternKind : uint8_t {
  kWildcard,
  kCall,
  kConstant,
  kVar,
  kTuple,
  kTupleGetItem,
  kRepeated,
  kOr,
  kAnd,
  kNot,
  kHasDType,
  kHasShape,
  kHasAttr,
  kWhere,
};

class PatternNode;

// A side condition on the value a pattern matched (a var seen through to
// what it is bound to).
using ExprPredicate = std::function<bool(const ExprNode& value)>;

// An attr a call must have: by name, with the index in its op's schema when
// the op is known (-1 otherwise: looked up in each call's op).
struct AttrConstraint {
  std::string name;
  int index = -1;
  AttrValue value;
};

// A pattern: a shared, immutable node. Methods return new patterns.
class Pattern {
 public:
  Pattern() = default;
  explicit Pattern(std::shared_ptr<const PatternNode> node) : node_(std::move(node)) {}

  const PatternNode* get() const { return node_.get(); }
  const PatternNode& operator*() const { return *node_; }
  const PatternNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }

  // This pattern capturing what it matched under `name`.
  Pattern named(std::string name) const;
  Pattern has_dtype(DType dtype) const;
  // Dims compare as polynomials: ("n", 4) matches only ("n", 4).
  Pattern has_shape(Shape shape) const;
  Pattern has_attr(const KwAttrs& attrs) const;
  Pattern where(std::string predicate_name, ExprPredicate predicate) const;

  // Readable text: permute_dims((mm := matmul(a, _)), axes=[1, 0]).
  std::string to_string() const;

 private:
  std::shared_ptr<const PatternNode> node_;
};

Pattern operator|(const Pattern& a, const Pattern& b);
Pattern operator&(const Pattern& a, const Pattern& b);
Pattern operator~(const Pattern& a);

// is_op(op)({args...}, {attrs...}): a call of op.
class OpPattern {
 public:
  explicit OpPattern(const OpDef& op) : op_(op) {}
  // Args one pattern each, or runs (repeated) of them; the attrs the call
  // must have, by name (coerced as the op's schema does: an int is a list).
  Pattern operator()(std::vector<Pattern> args, const KwAttrs& attrs = {}) const;

 private:
  const OpDef& op_;
};

Pattern wildcard();
OpPattern is_op(OpHandle op);
OpPattern is_op(const std::string& op_name);  // aj::Error when no op has that name
Pattern is_const();
// A var bound to nothing the matcher sees (a param); with a hint, only vars
// of that name hint.
Pattern is_var(std::string name_hint = "");
Pattern is_tuple(std::vector<Pattern> fields);
// index -1: any field.
Pattern is_tuple_get_item(const Pattern& tuple, int index = -1);
// A run of consecutive tuple fields or call args, each matching `element`,
// as an element of is_tuple or of is_op(...)(...). `name` captures the run
// (a list); `count_name` ties its length to other runs of that count name.
// Two runs in one list must share a count name (their lengths then split
// the list evenly).
Pattern repeated(const Pattern& element, std::string name = "", std::string count_name = "");

// The op ids a call must have for p to match it; empty when p may match a
// call of any op (or matches no call: see can_match_call).
std::vector<OpId> root_ops(const Pattern& p);
// Whether p may match a call at all (false for is_const(), is_tuple(...), ...).
bool can_match_call(const Pattern& p);

// A name captured by a pattern, as match results report it.
struct CaptureName {
  std::string name;
  bool is_list;  // a run's name, or a name inside a run: one value per element
};
// The names p captures, each once, in the order they first appear.
std::vector<CaptureName> capture_names(const Pattern& p);

class PatternNode {
 public:
  PatternKind kind() const { return kind_; }
  // The capture name ("" for none).
  const std::string& name() const { return name_; }
  // Call args, tuple fields, the tuple of an item, the alternatives of | and
  // &, the pattern under ~, a constraint or a name, a run's element.
  const std::vector<Pattern>& operands() const { return operands_; }
  const OpDef* op() const { return op_; }                          // kCall
  const std::vector<AttrConstraint>& attrs() const { return attrs_; }  // kCall, kHasAttr
  int index() const { return index_; }                              // kTupleGetItem
  DType dtype() const { return dtype_; }                            // kHasDType
  const Shape& shape() const { return shape_; }                     // kHasShape
  const std::string& text() const { return text_; }  // kVar: name hint; kRepeated: count name; kWhere: predicate name
  const ExprPredicate& predicate() const { return predicate_; }     // kWhere
  // Whether this pattern or one inside it has a capture name or a run's
  // count name: what the name checks (pattern.cc) must look at.
  bool has_names() const { return has_names_; }
  // 1 for a leaf, else 1 + the deepest operand's depth: what bounds the
  // recursion of every walk over the pattern (at most kMaxPatternDepth).
  uint32_t depth() const { return depth_; }

 private:
  friend class PatternFactory;
  PatternNode() = default;

  PatternKind kind_ = PatternKind::kWildcard;
  std::string name_;
  std::vector<Pattern> operands_;
  const OpDef* op_ = nullptr;
  std::vector<AttrConstraint> attrs_;
  int index_ = -1;
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::string text_;
  ExprPredicate predicate_;
  bool has_names_ = false;
  uint32_t depth_ = 1;
};

// How deeply a pattern may nest (~~~p, is_op("exp")(is_op("exp")(...)), a
// text rule's chain of bindings). Matching, printing and checking a pattern
// recurse once per level, so building a deeper one is an aj::Error: the C++
// stack stays bounded whatever Python builds.
constexpr uint32_t kMaxPatternDepth = 5000;

// Checks of the names of patterns built on this thread are put off while a
// DeferredNameChecks lives: a pattern built bottom-up with a name on every
// node (Python's capture tags) is then checked once, by check_pattern_names
// on its root, not once per node. Not for user code: the patterns built
// meanwhile are unchecked until their root is.
class DeferredNameChecks {
 public:
  DeferredNameChecks();
  ~DeferredNameChecks();
  DeferredNameChecks(const DeferredNameChecks&) = delete;
  DeferredNameChecks& operator=(const DeferredNameChecks&) = delete;
};

// The checks of the names `p` uses (see pattern.h's top): an aj::Error
// naming the first conflict. Linear in the number of distinct nodes of p.
void check_pattern_names(const Pattern& p);

}  // namespace aj
