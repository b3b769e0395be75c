// The matcher (pattern/match.h): one recursive walk of the pattern tree
// beside the expr, seeing vars through their bindings. Captures are pushed
// on one trail as nodes match; `|` and `~` cut it back to where they began
// when a side fails (or, for `~`, always). Names are checked against the
// captures of their scope (the whole match, or one element of a run) as they
// are made, so a name used twice costs a look-up, not a second match.
//
// What a cut drops would be matched again when a pattern object the dropped
// side used is met again (by the other side of `|`, or after `~`), doubling
// the work at each level of such nesting. So inside a side that may be
// dropped, the matcher remembers its nodes' results (match_memo.h):
//   - The trail is a stack whose entries are kept for the match (pushed_),
//     so the index of its top entry names the whole trail. Matching a node
//     is a function of the node, the expr and that state (with the runs'
//     stack and the scope): a node met again in the same state grows the
//     trail back to what it left, usually by moving the top up over the
//     entries the cut left in place.
//   - A private node (match_memo.h) matches alike in any state where its
//     name is free: it is remembered by node and expr alone, and what it
//     pushed below its own capture goes back as one entry, laid out when
//     the match's captures are gathered.
#include "adjoint/pattern/match.h"

#include <algorithm>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/common_values.h"
#include "match_memo.h"

namespace aj {

// ---- Bindings ----

const ExprNode* IndexBindings::bound_value(const VarNode* v) const {
  const Expr* e = index_.value(v);
  return e ? e->get() : nullptr;
}

size_t IndexBindings::num_users(const VarNode* v) const { return index_.num_users(v); }

const ExprNode& resolve(const Expr& e, const Bindings& bindings) {
  const ExprNode* n = e.get();
  while (n->kind() == ExprKind::kVar) {
    const ExprNode* bound = bindings.bound_value(static_cast<const VarNode*>(n));
    if (!bound) break;
    n = bound;
  }
  return *n;
}

// ---- Match ----

namespace {

bool is_run(const PatternNode& p) { return p.kind() == PatternKind::kRepeated; }

// Two captures of one name agree: the same var, equal constants, tuples of
// agreeing fields.
bool same_value(const Expr& a, const Expr& b) { return cse::value_equal(a, b); }

// A constraint's index is the attr's place in the schema of the op it was
// made for; has_attr checks a call before its inner pattern has checked the
// op, so a call of another op reads the attr by name instead.
bool attr_agrees(const OpDef& op, const CallNode& call, const AttrConstraint& c) {
  auto at = static_cast<size_t>(c.index);
  if (c.index >= 0 && at < call.attrs().size() && at < op.attrs.size() && op.attrs[at].name == c.name)
    return attr_equal(call.attrs()[at], c.value);
  int i = op.attr_index(c.name);  // a constraint on calls of any op: read as this op reads it
  if (i < 0) return false;
  try {
    return attr_equal(call.attrs()[static_cast<size_t>(i)], coerce_attr(op, op.attrs[static_cast<size_t>(i)], c.value));
  } catch (const Error&) {
    return false;  // a value this op's attr cannot take
  }
}

bool attrs_agree(const std::vector<AttrConstraint>& attrs, const CallNode& call) {
  for (const AttrConstraint& c : attrs)
    if (!attr_agrees(call.op(), call, c)) return false;
  return true;
}

}  // namespace

bool Match::has(std::string_view name) const {
  for (const Capture& c : captures_)
    if (c.pattern->name() == name) return true;
  return false;
}

const Expr& Match::operator[](std::string_view name) const {
  for (const Capture& c : captures_)
    if (c.pattern->name() == name) return *c.expr;
  throw Error(str("the match has no capture named '", name, "'"));
}

std::vector<Expr> Match::list(std::string_view name) const {
  std::vector<Expr> out;
  for (const Capture& c : captures_) {
    if (c.pattern->name() != name) continue;
    if (is_run(*c.pattern) && c.element == 0 && !out.empty()) break;  // a second run of the name: the same values
    out.push_back(*c.expr);
  }
  return out;
}

const CallNode* Match::call(std::string_view name) const { return call((*this)[name]); }

const CallNode* Match::call(const Expr& e) const {
  const ExprNode& v = resolve(e, *bindings_);
  return v.kind() == ExprKind::kCall ? static_cast<const CallNode*>(&v) : nullptr;
}

// ---- Matcher ----

Matcher::Matcher(const Bindings& bindings)
    : bindings_(bindings), memo_(std::make_unique<match_detail::MemoTable>()),
      remembered_nodes_(std::make_unique<match_detail::RememberedNodes>()) {
  match_.bindings_ = &bindings;
}

Matcher::~Matcher() = default;

bool Matcher::match(const Pattern& p, const Expr& e) {
  if (!p) throw Error("match: the pattern is null");
  if (is_run(*p)) throw Error(str("match: ", p.to_string(), " matches a run of tuple fields or call args, not one expr"));
  reset(p, e);
  if (!node(*p, e)) return false;
  gather();
  return true;
}

void Matcher::reset(const Pattern& p, const Expr& e) {
  match_.root_ = &e;
  match_.captures_.clear();
  pushed_.clear();
  trail_.clear();
  size_ = 0;
  runs_.clear();
  run_top_ = kNone;
  scope_ = 0;
  next_scope_ = 1;
  scope_begin_ = 0;
  cuttable_ = 0;
  restores_ = 0;
  memo_->clear();
  memo_off_ = false;
  root_ = &p;
  remembered_ = nullptr;
  segments_.clear();
  if (indexed_) named_.clear();
  indexed_ = false;
}

// Inside a side that `|` or `~` may drop, and once anything is remembered,
// the nodes worth remembering (match_memo.h) are looked up before they are
// matched.
bool Matcher::node(const PatternNode& p, const Expr& e) {
  interrupt_.tick();
  if (p.operands().empty() || memo_off_ || (cuttable_ == 0 && memo_->empty())) return node_here(p, e);
  return remembered_node(p, e);
}

bool Matcher::node_here(const PatternNode& p, const Expr& e) {
  int settled = settled_by_name(p, e);
  if (settled >= 0) return settled;
  return matches_here(p, e) && record(p, e);
}

// A name already captured (in this scope) must take the same value; when
// the same pattern object captured it, that is all there is to check: a
// pattern used in several places is matched once, not once per path to it
// (which would be exponential in how deeply such uses nest). 1: p matches,
// 0: it does not, -1: p must be matched.
int Matcher::settled_by_name(const PatternNode& p, const Expr& e) {
  if (p.name().empty()) return -1;
  uint32_t c = captured(p.name());
  if (c == kNone) return -1;
  const Capture& earlier = pushed_[c].capture;
  if (!same_value(*earlier.expr, e)) return 0;
  return earlier.pattern == &p ? 1 : -1;
}

// Only the kinds that look at what a var stands for resolve it; a var has
// its value's type, so type constraints read the var's own.
bool Matcher::matches_here(const PatternNode& p, const Expr& e) {
  const auto& ops = p.operands();
  switch (p.kind()) {
    case PatternKind::kWildcard:
      return true;
    case PatternKind::kCall: {
      const ExprNode& v = resolve(e, bindings_);
      if (v.kind() != ExprKind::kCall) return false;
      const auto& call = static_cast<const CallNode&>(v);
      return call.op().id == p.op()->id && attrs_agree(p.attrs(), call) && sequence(ops, call.args());
    }
    case PatternKind::kConstant:
      return resolve(e, bindings_).kind() == ExprKind::kConstant;
    case PatternKind::kVar: {
      const ExprNode& v = resolve(e, bindings_);
      return v.kind() == ExprKind::kVar &&
             (p.text().empty() || static_cast<const VarNode&>(v).name_hint() == p.text());
    }
    case PatternKind::kTuple: {
      const ExprNode& v = resolve(e, bindings_);
      return v.kind() == ExprKind::kTuple && sequence(ops, static_cast<const TupleNode&>(v).fields());
    }
    case PatternKind::kTupleGetItem: {
      const ExprNode& v = resolve(e, bindings_);
      if (v.kind() != ExprKind::kTupleGetItem) return false;
      const auto& item = static_cast<const TupleGetItemNode&>(v);
      return (p.index() < 0 || p.index() == item.index()) && node(*ops[0], item.tuple());
    }
    case PatternKind::kRepeated:
      return false;  // runs are matched by sequence(); pattern.cc lets them stand nowhere else
    case PatternKind::kOr:
      return either(*ops[0], *ops[1], e);
    case PatternKind::kAnd:
      return node(*ops[0], e) && node(*ops[1], e);
    case PatternKind::kNot:
      return negation(*ops[0], e);
    case PatternKind::kHasDType:
      return e->type()->is_tensor() && e->type()->dtype() == p.dtype() && node(*ops[0], e);
    case PatternKind::kHasShape:
      return e->type()->is_tensor() && e->type()->shape() == p.shape() && node(*ops[0], e);
    case PatternKind::kHasAttr: {
      const ExprNode& v = resolve(e, bindings_);
      return v.kind() == ExprKind::kCall && attrs_agree(p.attrs(), static_cast<const CallNode&>(v)) &&
             node(*ops[0], e);
    }
    case PatternKind::kWhere:  // after the inner pattern: the predicate may rely on what it checked
      return node(*ops[0], e) && p.predicate()(resolve(e, bindings_));
  }
  return false;
}

// A failed side leaves what it pushed; the trail is cut back before the
// other side (what a failed node pushed is never read: its failure ends
// every node around it up to the nearest `|` or `~`, or the match).
bool Matcher::either(const PatternNode& a, const PatternNode& b, const Expr& e) {
  Saved saved = save();
  ++cuttable_;
  bool left = node(a, e);
  --cuttable_;
  if (left) return true;
  cut(saved);
  return node(b, e);
}

bool Matcher::negation(const PatternNode& a, const Expr& e) {
  Saved saved = save();
  ++cuttable_;
  bool matched = node(a, e);
  --cuttable_;
  cut(saved);
  return !matched;
}

// Runs take what the single patterns leave, split evenly (pattern.cc makes
// several runs in one list share a count name).
bool Matcher::sequence(const std::vector<Pattern>& patterns, const std::vector<Expr>& exprs) {
  size_t runs = 0;
  for (const Pattern& p : patterns) runs += is_run(*p);
  if (runs == 0) {
    if (patterns.size() != exprs.size()) return false;
    for (size_t i = 0; i < exprs.size(); ++i)
      if (!node(*patterns[i], exprs[i])) return false;
    return true;
  }
  size_t singles = patterns.size() - runs;
  if (exprs.size() < singles || (exprs.size() - singles) % runs != 0) return false;
  size_t per_run = (exprs.size() - singles) / runs, i = 0;
  for (const Pattern& p : patterns) {
    if (is_run(*p)) {
      if (!run(*p, exprs, i, per_run)) return false;
      i += per_run;
    } else if (!node(*p, exprs[i++])) {
      return false;
    }
  }
  return true;
}

bool Matcher::run(const PatternNode& r, const std::vector<Expr>& exprs, size_t begin, size_t n) {
  if (!r.text().empty() && !count_agrees(&r.text(), n)) return false;
  const PatternNode& element = *r.operands()[0];
  uint32_t outer_scope = scope_, outer_begin = scope_begin_;
  bool ok = true;
  for (size_t k = 0; ok && k < n; ++k) {
    scope_ = next_scope_++;
    scope_begin_ = size_;
    ok = node(element, exprs[begin + k]);
  }
  scope_ = outer_scope;
  scope_begin_ = outer_begin;
  if (!ok || (!r.name().empty() && !run_agrees(&r.name(), exprs, begin, n))) return false;
  for (size_t k = 0; k < n; ++k) push({&r, &exprs[begin + k], scope_, static_cast<uint32_t>(k)}, kNone);
  return true;
}

// A run named as an earlier one (in this scope) must hold the same values.
bool Matcher::run_agrees(const std::string* name, const std::vector<Expr>& exprs, size_t begin, size_t n) {
  for (uint32_t i = run_top_; i != kNone; i = runs_[i].below) {
    const Run& r = runs_[i];
    if (r.scope != scope_ || *r.name != *name || r.begin == SIZE_MAX) continue;
    if (r.size != n) return false;
    for (size_t k = 0; k < n; ++k)
      if (!same_value(*at(r.begin + k).expr, exprs[begin + k])) return false;
    return true;
  }
  push_run({name, scope_, size_, n, kNone});
  return true;
}

// Runs of one count name (in this scope) must have one length.
bool Matcher::count_agrees(const std::string* name, size_t n) {
  for (uint32_t i = run_top_; i != kNone; i = runs_[i].below) {
    const Run& r = runs_[i];
    if (r.scope == scope_ && r.begin == SIZE_MAX && *r.name == *name) return r.size == n;
  }
  push_run({name, scope_, SIZE_MAX, n, kNone});
  return true;
}

// Pushes the capture of p; a name taken earlier in this scope must agree.
bool Matcher::record(const PatternNode& p, const Expr& e) {
  uint32_t same = kNone;
  if (!p.name().empty()) {
    same = captured(p.name());
    if (same != kNone && !same_value(*pushed_[same].capture.expr, e)) return false;
  }
  uint32_t entry = push({&p, &e, scope_, 0}, same);
  if (indexed_ && !p.name().empty()) named_[{p.name(), scope_}] = {entry, restores_};
  return true;
}

// ---- the trail ----

// Pushing drops what was cut from above the top: the trail past size_ is
// always the rest of an earlier trail with the same bottom.
uint32_t Matcher::push(const Capture& c, uint32_t same_name) {
  auto entry = static_cast<uint32_t>(pushed_.size());
  pushed_.push_back({c, top(), size_, same_name, restores_});
  trail_.resize(size_);
  trail_.push_back(entry);
  ++size_;
  return entry;
}

void Matcher::push_run(const Run& r) {
  runs_.push_back(r);
  runs_.back().below = run_top_;
  run_top_ = static_cast<uint32_t>(runs_.size() - 1);
}

// Once the memo is off nothing refers to what was pushed since s but the
// name hints, which captured() checks: it is dropped.
void Matcher::cut(const Saved& s) {
  size_ = s.size;
  run_top_ = s.run_top;
  next_scope_ = s.next_scope;  // the scopes made since held only captures cut now
  if (!memo_off_) return;
  trail_.resize(size_);
  pushed_.resize(std::min(pushed_.size(), s.pushed));
  segments_.resize(std::min(segments_.size(), s.segments));
  runs_.resize(std::min(runs_.size(), s.runs));
}

bool Matcher::on_trail(uint32_t entry) const {
  uint32_t at = pushed_[entry].position;
  return at < size_ && trail_[at] == entry;
}

// Below kIndexFrom captures a backward scan of the scope is quickest; from
// there on the names pushed are indexed by (name, scope). A hint set when
// no restore has happened since is exact: every capture of the name on the
// trail is the hinted entry or lies below it, along its same_name links (a
// capture leaves the trail only when cut, and comes back only by a
// restore). After a restore the scope is scanned once for the name.
uint32_t Matcher::captured(const std::string& name) {
  constexpr uint32_t kIndexFrom = 32;
  if (!indexed_ && size_ < kIndexFrom) return scan(name);
  if (!indexed_) index_names();
  auto it = named_.find({name, scope_});
  if (it == named_.end()) return kNone;  // never pushed in this scope
  Hint& hint = it->second;
  if (hint.restores != restores_ || !captures(hint.entry, name)) {
    hint = {scan(name), restores_};
    return hint.entry;
  }
  while (hint.entry != kNone && !on_trail(hint.entry)) hint.entry = pushed_[hint.entry].same_name;
  return hint.entry;
}

// Whether entry is kNone or a capture of name in this scope (a hint may
// name an entry dropped since: see cut).
bool Matcher::captures(uint32_t entry, const std::string& name) const {
  if (entry == kNone) return true;
  if (entry >= pushed_.size()) return false;
  const Capture& c = pushed_[entry].capture;
  return c.pattern && c.scope == scope_ && c.pattern->name() == name;
}

// The scope's last capture of name, by a backward scan.
uint32_t Matcher::scan(const std::string& name) const {
  for (uint32_t i = size_; i-- > scope_begin_;) {
    const Capture& c = at(i);
    if (c.scope == scope_ && c.pattern && c.pattern->name() == name) return trail_[i];
  }
  return kNone;
}

// Every capture pushed so far, the last of each (name, scope) as its hint.
void Matcher::index_names() {
  for (uint32_t i = 0; i < pushed_.size(); ++i) {
    const Capture& c = pushed_[i].capture;
    if (c.pattern && !c.pattern->name().empty()) named_[{c.pattern->name(), c.scope}] = {i, pushed_[i].restores};
  }
  indexed_ = true;
}

// The trail as the match's captures, each private node's segment laid out
// in place of its entry (its new scopes renumbered past all others).
void Matcher::gather() {
  uint32_t fresh = next_scope_;
  for (uint32_t i = 0; i < size_; ++i) {
    const Capture& c = at(i);
    if (c.pattern) match_.captures_.push_back(c);
    else gather_segment(segments_[c.element], c.scope, fresh);
  }
}

void Matcher::gather_segment(const Segment& s, uint32_t scope, uint32_t& fresh) {
  std::vector<uint32_t> entries;
  for (uint32_t i = s.top; i != s.below; i = pushed_[i].below) entries.push_back(i);
  uint32_t base = fresh;
  fresh += s.end_scope - s.first_scope;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    Capture c = pushed_[*it].capture;
    c.scope = c.scope == s.scope ? scope : base + (c.scope - s.first_scope);
    if (c.pattern) match_.captures_.push_back(c);
    else gather_segment(segments_[c.element], c.scope, fresh);
  }
}

// ---- the memo ----

bool Matcher::remembered_node(const PatternNode& p, const Expr& e) {
  if (!remembered_) remembered_ = &remembered_nodes_->of(*root_);
  auto it = remembered_->find(&p);
  if (it == remembered_->end()) return node_here(p, e);
  return it->second ? private_node(p, e) : state_node(p, e);
}

bool Matcher::state_node(const PatternNode& p, const Expr& e) {
  MemoKey key = state_key(p, e);
  if (const MemoResult* r = memo_->find(key)) return replay(*r);
  bool matched = node_here(p, e);
  remember(key, outcome(matched));
  return matched;
}

// Only what may be dropped is remembered (what stays on the trail is found
// by its name). Past kMemoBudget results and captures pushed the memo is
// off for the rest of the match: a match the memo does not shorten then
// keeps only what its trail holds, as it would without the memo.
void Matcher::remember(const MemoKey& key, const MemoResult& r) {
  constexpr size_t kMemoBudget = size_t{1} << 20;
  if (cuttable_ == 0 || memo_off_) return;
  if (memo_->size() + pushed_.size() > kMemoBudget) {
    memo_->clear();
    memo_off_ = true;
    return;
  }
  memo_->insert(key, r);
}

// A private node whose name is free matches alike whatever was captured
// before: its result is remembered by node and expr alone, and what it
// pushed below its own capture goes back on the trail as one entry (no
// later look-up reads those captures: their names are theirs alone, and
// what they belong to is reached only through this node).
bool Matcher::private_node(const PatternNode& p, const Expr& e) {
  int settled = settled_by_name(p, e);
  if (settled >= 0) return settled;
  MemoKey key{&p, &e, kNone, kNone, kNone, kNone, kNone};
  if (const MemoResult* r = memo_->find(key)) {
    if (!r->matched) return false;
    push_segment(*r);
    return record(p, e);
  }
  uint32_t below = top(), scope = scope_, first_scope = next_scope_;
  bool matched = matches_here(p, e);
  remember(key, {matched, 0, top(), kNone, next_scope_, below, scope, first_scope});
  return matched && record(p, e);
}

void Matcher::push_segment(const MemoResult& r) {
  if (r.top == r.below) return;
  auto index = static_cast<uint32_t>(segments_.size());
  segments_.push_back({r.top, r.below, r.scope, r.first_scope, r.next_scope});
  push({nullptr, nullptr, scope_, index}, kNone);
}

Matcher::MemoKey Matcher::state_key(const PatternNode& p, const Expr& e) const {
  return {&p, &e, top(), run_top_, scope_, scope_begin_, next_scope_};
}

Matcher::MemoResult Matcher::outcome(bool matched) const {
  return {matched, size_, top(), run_top_, next_scope_, kNone, kNone, kNone};
}

// The state a node left, from the memo. What it pushed is usually still
// past the top of the trail (it was cut and nothing was pushed since);
// otherwise its entries are laid on the trail again from pushed_.
bool Matcher::replay(const MemoResult& r) {
  if (!r.matched) return false;
  if (r.size > size_) {
    if (trail_.size() < r.size || trail_[r.size - 1] != r.top) {
      relaid_.clear();
      for (uint32_t i = r.top; i != top(); i = pushed_[i].below) relaid_.push_back(i);
      trail_.resize(size_);
      trail_.insert(trail_.end(), relaid_.rbegin(), relaid_.rend());
    }
    size_ = r.size;
    ++restores_;
  }
  run_top_ = r.run_top;
  next_scope_ = r.next_scope;
  return true;
}

std::optional<Match> match(const Pattern& p, const Expr& e, const Bindings& bindings) {
  Matcher m(bindings);
  if (!m.match(p, e)) return std::nullopt;
  return m.result();
}

}  // namespace aj
