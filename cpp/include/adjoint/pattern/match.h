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
// per path to it). `|` tries its left side, then its right (the first that
// matches is kept, and nothing later goes back on that choice); where `|`
// or `~` drops what a side matched, a sub-pattern that side matched is not
// matched again on the same expr with the same captures made so far: its
// result is remembered. A long match looks at interrupts
// (support/interrupt.h) as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "adjoint/pattern/pattern.h"
#include "adjoint/support/interrupt.h"

namespace aj {

class DataflowIndex;

namespace match_detail {
class MemoTable;
class RememberedNodes;
struct MemoKey;
struct MemoResult;
}  // namespace match_detail

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
  explicit Matcher(const Bindings& bindings);
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;
  // Whether p matches e; when it does, result() holds the captures until the
  // next call. p must not be a repeated run (aj::Error).
  bool match(const Pattern& p, const Expr& e);
  const Match& result() const { return match_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // A capture pushed on the trail, kept (in pushed_) for the whole match:
  // the trail is a stack of these, so the index of its top entry names all
  // of it, and a cut back trail is grown again by pointing at entries kept.
  struct Pushed {
    Capture capture;
    uint32_t below;      // the entry under it on the trail (kNone: none)
    uint32_t position;   // its place on the trail
    uint32_t same_name;  // the capture of its name in its scope under it (kNone: none)
    uint32_t restores;   // restores_ when it was pushed
  };
  // A count name's length, or a run name's captures, within a scope; a
  // stack of these as well (runs_ keeps them all).
  struct Run {
    const std::string* name;
    uint32_t scope;
    size_t begin;  // first capture of a named run; SIZE_MAX for a count name
    size_t size;
    uint32_t below;
  };
  // What `|` and `~` put back when they drop a side (and, once the memo is
  // off, how much of pushed_, segments_ and runs_ to keep).
  struct Saved {
    uint32_t size, run_top, next_scope;
    size_t pushed, segments, runs;
  };
  // What a private node pushed below its own capture (see match_memo.h),
  // on the trail as one entry: its capture's pattern is null and its
  // element the segment's index in segments_.
  struct Segment {
    uint32_t top, below;  // the entries from top down to, not including, below
    uint32_t scope;       // where they were made, with new scopes first_scope to end_scope
    uint32_t first_scope, end_scope;
  };
  using MemoKey = match_detail::MemoKey;
  using MemoResult = match_detail::MemoResult;

  void reset(const Pattern& p, const Expr& e);
  bool node(const PatternNode& p, const Expr& e);
  bool node_here(const PatternNode& p, const Expr& e);
  int settled_by_name(const PatternNode& p, const Expr& e);
  bool matches_here(const PatternNode& p, const Expr& e);
  bool sequence(const std::vector<Pattern>& patterns, const std::vector<Expr>& exprs);
  bool run(const PatternNode& r, const std::vector<Expr>& exprs, size_t begin, size_t n);
  bool run_agrees(const std::string* name, const std::vector<Expr>& exprs, size_t begin, size_t n);
  bool count_agrees(const std::string* name, size_t n);
  bool record(const PatternNode& p, const Expr& e);
  bool either(const PatternNode& a, const PatternNode& b, const Expr& e);
  bool negation(const PatternNode& a, const Expr& e);

  // ---- the trail ----
  uint32_t top() const { return size_ ? trail_[size_ - 1] : kNone; }
  const Capture& at(size_t position) const { return pushed_[trail_[position]].capture; }
  uint32_t push(const Capture& c, uint32_t same_name);
  void push_run(const Run& r);
  Saved save() const { return {size_, run_top_, next_scope_, pushed_.size(), segments_.size(), runs_.size()}; }
  void cut(const Saved& s);
  bool on_trail(uint32_t entry) const;
  // The last capture of `name` in the current scope (an index into
  // pushed_), or kNone.
  uint32_t captured(const std::string& name);
  bool captures(uint32_t entry, const std::string& name) const;
  uint32_t scan(const std::string& name) const;
  void index_names();
  void gather();
  void gather_segment(const Segment& s, uint32_t scope, uint32_t& fresh);

  // ---- the memo ----
  bool remembered_node(const PatternNode& p, const Expr& e);
  bool private_node(const PatternNode& p, const Expr& e);
  bool state_node(const PatternNode& p, const Expr& e);
  void remember(const MemoKey& key, const MemoResult& r);
  MemoKey state_key(const PatternNode& p, const Expr& e) const;
  MemoResult outcome(bool matched) const;
  bool replay(const MemoResult& r);
  void push_segment(const MemoResult& r);

  const Bindings& bindings_;
  Match match_;
  std::vector<Pushed> pushed_;
  std::vector<uint32_t> trail_;  // indices into pushed_; past size_, what was cut (kept until overwritten)
  uint32_t size_ = 0;
  std::vector<Run> runs_;
  uint32_t run_top_ = kNone;
  uint32_t scope_ = 0;  // the scope captures are made in now
  uint32_t next_scope_ = 1;
  uint32_t scope_begin_ = 0;  // the first position of the current scope
  uint32_t cuttable_ = 0;     // how many sides that `|` or `~` may drop are being matched
  uint32_t restores_ = 0;     // how many times the trail was grown from the memo
  std::unique_ptr<match_detail::MemoTable> memo_;
  bool memo_off_ = false;  // for the rest of this match: it grew past its budget
  std::unique_ptr<match_detail::RememberedNodes> remembered_nodes_;  // of the roots matched
  const Pattern* root_ = nullptr;                                    // being matched
  // Of root_, once asked for: node -> whether it is private (match_memo.h).
  const std::unordered_map<const PatternNode*, bool>* remembered_ = nullptr;
  std::vector<Segment> segments_;
  std::vector<uint32_t> relaid_;  // a buffer of replay()
  // (name, scope) -> a capture of that name in that scope and when it was
  // set, once a match has many captures: captured() reads the last capture
  // of the name from it (see there) instead of scanning the scope.
  struct NameScope {
    std::string_view name;
    uint32_t scope;
    bool operator==(const NameScope& o) const { return scope == o.scope && name == o.name; }
  };
  struct NameScopeHash {
    size_t operator()(const NameScope& k) const { return std::hash<std::string_view>()(k.name) * 31 + k.scope; }
  };
  struct Hint {
    uint32_t entry;
    uint32_t restores;
  };
  std::unordered_map<NameScope, Hint, NameScopeHash> named_;
  bool indexed_ = false;  // named_ holds every name pushed in this match
  InterruptPoll interrupt_;  // asked at each node matched
};

// The captures of p matched against e, or nullopt.
std::optional<Match> match(const Pattern& p, const Expr& e, const Bindings& bindings);

}  // namespace aj
