// Matching patterns (pattern/pattern.h) against exprs. A matcher sees the
// function it matches in through Bindings: what a var is bound to, and how
// many bindings use it. The dataflow index of a finished function provides
// them (IndexBindings), and so does the rewriter for the function it is
// building, whose new bindings rules must see as they are made.
//
// Matching looks through var bindings: a pattern for a call matches a var
// bound to that call (and a var bound to a var bound to it). What a pattern
// captures is the expr as written where it matched (a var, not what the var
// is bound to), so a replacement that uses it refers to the existing value.
// Time is linear in the size of the pattern and of the runs it matches (a
// named pattern used in several places is matched once per scope, not once
// per path to it);
// `|` tries its left side, then its right (the first that matches is kept).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adjoint/pattern/pattern.h"

namespace aj {

class DataflowIndex;

// What a matcher reads of a function.
class Bindings {
 public:
  virtual ~Bindings() = default;
  // The value v is bound to, or nullptr when v is bound to nothing here (a
  // param, a var of another function).
  virtual const ExprNode* bound_value(const VarNode* v) const = 0;
  // How many bindings use v, plus one when the function returns it.
  virtual size_t num_users(const VarNode* v) const = 0;
};

// The bindings of a finished function, read from its dataflow index.
class IndexBindings final : public Bindings {
 public:
  explicit IndexBindings(const DataflowIndex& index) : index_(index) {}
  const ExprNode* bound_value(const VarNode* v) const override;
  size_t num_users(const VarNode* v) const override;

 private:
  const DataflowIndex& index_;
};

// What e stands for: e itself, or, for a var, the value it is bound to
// (followed through vars bound to vars); a var bound to nothing stands for
// itself.
const ExprNode& resolve(const Expr& e, const Bindings& bindings);

// What one pattern node matched.
struct Capture {
  const PatternNode* pattern;
  const Expr* expr;   // as written where it matched; lives as long as the matched expr
  uint32_t scope;     // 0 outside runs, else one id per element of a run
  uint32_t element;   // for the captures of a run node itself: the position in the run
};

// The captures of one match. Exprs are references into the matched expr and
// the function's bindings: valid while those live.
class Match {
 public:
  const Expr& root() const { return *root_; }
  const Bindings& bindings() const { return *bindings_; }
  // Every node that matched, inner nodes before outer ones.
  const std::vector<Capture>& captures() const { return captures_; }

  bool has(std::string_view name) const;
  // The expr captured under name; an aj::Error when there is none.
  const Expr& operator[](std::string_view name) const;
  // The run captured under name (or the values a name inside a run took, one
  // per element), in order; empty when there is none.
  std::vector<Expr> list(std::string_view name) const;
  // The call the capture `name` is, or is bound to; nullptr when it is none.
  const CallNode* call(std::string_view name) const;
  // The call e is, or is bound to; nullptr when it is none.
  const CallNode* call(const Expr& e) const;

 private:
  friend class Matcher;
  const Expr* root_ = nullptr;
  const Bindings* bindings_ = nullptr;
  std::vector<Capture> captures_;
};

// Matches patterns in one function, reusing its buffers from match to match.
class Matcher {
 public:
  explicit Matcher(const Bindings& bindings) : bindings_(bindings) { match_.bindings_ = &bindings; }
  // Whether p matches e; when it does, result() holds the captures until the
  // next call. p must not be a repeated run (aj::Error).
  bool match(const Pattern& p, const Expr& e);
  const Match& result() const { return match_; }

 private:
  // A count name's length, or a run name's captures, within a scope.
  struct Run {
    const std::string* name;
    uint32_t scope;
    size_t begin;  // first capture of a named run
    size_t size;
  };

  bool node(const PatternNode& p, const Expr& e);
  bool matches_here(const PatternNode& p, const Expr& e);
  bool sequence(const std::vector<Pattern>& patterns, const std::vector<Expr>& exprs);
  bool run(const PatternNode& r, const std::vector<Expr>& exprs, size_t begin, size_t n);
  bool run_agrees(const std::string* name, const std::vector<Expr>& exprs, size_t begin, size_t n);
  bool count_agrees(const std::string* name, size_t n);
  bool record(const PatternNode& p, const Expr& e);
  // The capture of `name` in the current scope, or nullptr. Valid until
  // the next capture is pushed.
  const Capture* captured(const std::string& name);
  bool either(const PatternNode& a, const PatternNode& b, const Expr& e);
  bool negation(const PatternNode& a, const Expr& e);

  const Bindings& bindings_;
  Match match_;
  std::vector<Run> runs_;
  uint32_t scope_ = 0;      // the scope captures are made in now
  uint32_t next_scope_ = 1;
  size_t scope_begin_ = 0;  // the first capture of the current scope
  // (name, scope) -> the position of a capture of that name in that scope,
  // once a match has many captures: a hint for captured(), which checks it
  // (backtracking drops captures without telling it) and scans the scope
  // when it is stale.
  struct NameScope {
    std::string_view name;
    uint32_t scope;
    bool operator==(const NameScope& o) const { return scope == o.scope && name == o.name; }
  };
  struct NameScopeHash {
    size_t operator()(const NameScope& k) const { return std::hash<std::string_view>()(k.name) * 31 + k.scope; }
  };
  std::unordered_map<NameScope, size_t, NameScopeHash> named_;
  bool indexed_ = false;  // named_ holds every named capture's (name, scope)
};

// The captures of p matched against e, or nullopt.
std::optional<Match> match(const Pattern& p, const Expr& e, const Bindings& bindings);

}  // namespace aj
