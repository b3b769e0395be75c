// The matcher (pattern/match.h): one recursive walk of the pattern tree
// beside the expr, seeing vars through their bindings. Captures are pushed
// on one trail as nodes match; `|` and `~` cut it back to where they began
// when a side fails (or, for `~`, always). Names are checked against the
// captures of their scope (the whole match, or one element of a run) as they
// are made, so a name used twice costs a scan of that scope, not a second
// match.
#include "adjoint/pattern/match.h"

#include "adjoint/analysis/dataflow.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/common_values.h"

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

bool Matcher::match(const Pattern& p, const Expr& e) {
  if (!p) throw Error("match: the pattern is null");
  if (is_run(*p)) throw Error(str("match: ", p.to_string(), " matches a run of tuple fields or call args, not one expr"));
  match_.root_ = &e;
  match_.captures_.clear();
  runs_.clear();
  scope_ = 0;
  next_scope_ = 1;
  scope_begin_ = 0;
  if (indexed_) named_.clear();
  indexed_ = false;
  return node(*p, e);
}

// A name already captured (in this scope) must take the same value; when
// the same pattern object captured it, that is all there is to check: a
// pattern used in several places is matched once, not once per path to it
// (which would be exponential in how deeply such uses nest).
bool Matcher::node(const PatternNode& p, const Expr& e) {
  if (!p.name().empty()) {
    if (const Capture* c = captured(p.name())) {
      if (!same_value(*c->expr, e)) return false;
      if (c->pattern == &p) return true;
    }
  }
  return matches_here(p, e) && record(p, e);
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

bool Matcher::either(const PatternNode& a, const PatternNode& b, const Expr& e) {
  size_t captures = match_.captures_.size(), runs = runs_.size();
  if (node(a, e)) return true;
  match_.captures_.resize(captures);
  runs_.resize(runs);
  return node(b, e);
}

bool Matcher::negation(const PatternNode& a, const Expr& e) {
  size_t captures = match_.captures_.size(), runs = runs_.size();
  bool matched = node(a, e);
  match_.captures_.resize(captures);
  runs_.resize(runs);
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
  uint32_t outer_scope = scope_;
  size_t outer_begin = scope_begin_;
  bool ok = true;
  for (size_t k = 0; ok && k < n; ++k) {
    scope_ = next_scope_++;
    scope_begin_ = match_.captures_.size();
    ok = node(element, exprs[begin + k]);
  }
  scope_ = outer_scope;
  scope_begin_ = outer_begin;
  if (!ok || (!r.name().empty() && !run_agrees(&r.name(), exprs, begin, n))) return false;
  for (size_t k = 0; k < n; ++k)
    match_.captures_.push_back({&r, &exprs[begin + k], scope_, static_cast<uint32_t>(k)});
  return true;
}

// A run named as an earlier one (in this scope) must hold the same values.
bool Matcher::run_agrees(const std::string* name, const std::vector<Expr>& exprs, size_t begin, size_t n) {
  for (const Run& r : runs_) {
    if (r.scope != scope_ || *r.name != *name || r.begin == SIZE_MAX) continue;
    if (r.size != n) return false;
    for (size_t k = 0; k < n; ++k)
      if (!same_value(*match_.captures_[r.begin + k].expr, exprs[begin + k])) return false;
    return true;
  }
  runs_.push_back({name, scope_, match_.captures_.size(), n});
  return true;
}

// Runs of one count name (in this scope) must have one length.
bool Matcher::count_agrees(const std::string* name, size_t n) {
  for (const Run& r : runs_)
    if (r.scope == scope_ && r.begin == SIZE_MAX && *r.name == *name) return r.size == n;
  runs_.push_back({name, scope_, SIZE_MAX, n});
  return true;
}

// Pushes the capture of p; a name taken earlier in this scope must agree.
bool Matcher::record(const PatternNode& p, const Expr& e) {
  auto& captures = match_.captures_;
  if (!p.name().empty()) {
    if (const Capture* c = captured(p.name()); c && !same_value(*c->expr, e)) return false;
    if (indexed_) named_[{p.name(), scope_}] = captures.size();
  }
  captures.push_back({&p, &e, scope_, 0});
  return true;
}

// Below kIndexFrom captures a backward scan of the scope is quickest; from
// there on the captures are indexed by (name, scope), which keeps a large
// pattern (every node named, as Python's are) linear.
const Capture* Matcher::captured(const std::string& name) {
  constexpr size_t kIndexFrom = 32;
  auto& captures = match_.captures_;
  auto here = [&](size_t i) { return captures[i].scope == scope_ && captures[i].pattern->name() == name; };
  auto scan = [&]() -> Capture* {  // the scope's last capture of name
    for (size_t i = captures.size(); i-- > scope_begin_;)
      if (here(i)) return &captures[i];
    return nullptr;
  };
  if (!indexed_ && captures.size() < kIndexFrom) return scan();
  if (!indexed_) {
    for (size_t i = 0; i < captures.size(); ++i)
      if (!captures[i].pattern->name().empty()) named_[{captures[i].pattern->name(), captures[i].scope}] = i;
    indexed_ = true;
  }
  auto it = named_.find({name, scope_});
  if (it == named_.end()) return nullptr;
  if (it->second < captures.size() && here(it->second)) return &captures[it->second];
  Capture* found = scan();
  if (found) it->second = static_cast<size_t>(found - captures.data());
  else named_.erase(it);
  return found;
}

std::optional<Match> match(const Pattern& p, const Expr& e, const Bindings& bindings) {
  Matcher m(bindings);
  if (!m.match(p, e)) return std::nullopt;
  return m.result();
}

}  // namespace aj
