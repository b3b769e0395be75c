// Building patterns (pattern/pattern.h): each constructor checks its
// arguments (op arity, attr names and values, where a run may stand, how
// names are used) so that a pattern that exists is well formed, and
// to_string prints one back in the vocabulary it was built with.
#include "adjoint/pattern/pattern.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "adjoint/ir/printer.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {

class PatternFactory {
 public:
  static std::shared_ptr<PatternNode> node(PatternKind kind, std::vector<Pattern> operands = {}) {
    auto n = std::shared_ptr<PatternNode>(new PatternNode());
    n->kind_ = kind;
    n->operands_ = std::move(operands);
    for (const Pattern& o : n->operands_)
      if (o) n->depth_ = std::max(n->depth_, o->depth_ + 1);
    if (n->depth_ > kMaxPatternDepth)
      throw Error("pattern: nests more than " + std::to_string(kMaxPatternDepth) +
                  " levels deep, the most a pattern may (matching recurses once per level)");
    return n;
  }
  static std::shared_ptr<PatternNode> copy(const PatternNode& p) {
    return std::shared_ptr<PatternNode>(new PatternNode(p));
  }
  static void set_name(PatternNode& n, std::string name) { n.name_ = std::move(name); }
  static void set_op(PatternNode& n, const OpDef& op) { n.op_ = &op; }
  static void set_attrs(PatternNode& n, std::vector<AttrConstraint> attrs) { n.attrs_ = std::move(attrs); }
  static void set_index(PatternNode& n, int index) { n.index_ = index; }
  static void set_dtype(PatternNode& n, DType dtype) { n.dtype_ = dtype; }
  static void set_shape(PatternNode& n, Shape shape) { n.shape_ = std::move(shape); }
  static void set_text(PatternNode& n, std::string text) { n.text_ = std::move(text); }
  static void set_predicate(PatternNode& n, ExprPredicate p) { n.predicate_ = std::move(p); }
  static void set_has_names(PatternNode& n, bool has) { n.has_names_ = has; }
};

namespace {

using F = PatternFactory;

bool is_run(const Pattern& p) { return p && p->kind() == PatternKind::kRepeated; }

// Where an error is, as the text its message starts with, made only when an
// error needs it: printing a pattern walks all of it (every path through a
// pattern object used twice), which building one must not.
class Where {
 public:
  template <class Make>
  Where(Make make) : make_(std::move(make)) {}  // NOLINT: implicit from a lambda
  Where(const char* text) : make_([text] { return std::string(text); }) {}  // NOLINT
  friend std::ostream& operator<<(std::ostream& os, const Where& w) { return os << w.make_(); }

 private:
  std::function<std::string()> make_;
};

// ---- to_string ----

void print(std::ostream& os, const Pattern& p);

void print_list(std::ostream& os, const std::vector<Pattern>& ps) {
  for (size_t i = 0; i < ps.size(); ++i) {
    if (i) os << ", ";
    print(os, ps[i]);
  }
}

void print_attrs_dict(std::ostream& os, const std::vector<AttrConstraint>& attrs) {
  os << "{";
  for (size_t i = 0; i < attrs.size(); ++i)
    os << (i ? ", " : "") << string_literal(attrs[i].name) << ": " << attr_to_string(attrs[i].value);
  os << "}";
}

// The inner pattern of a method call (p.has_dtype(...)): ~p needs parentheses.
void print_receiver(std::ostream& os, const Pattern& p) {
  bool paren = p && p->kind() == PatternKind::kNot && p->name().empty();
  if (paren) os << "(";
  print(os, p);
  if (paren) os << ")";
}

void print_unnamed(std::ostream& os, const Pattern& p) {
  const PatternNode& n = *p;
  const auto& ops = n.operands();
  switch (n.kind()) {
    case PatternKind::kWildcard:
      os << "_";
      return;
    case PatternKind::kCall:
      os << n.op()->name << "(";
      print_list(os, ops);
      for (size_t i = 0; i < n.attrs().size(); ++i)
        os << (ops.empty() && i == 0 ? "" : ", ") << n.attrs()[i].name << "=" << attr_to_string(n.attrs()[i].value);
      os << ")";
      return;
    case PatternKind::kConstant:
      os << "const()";
      return;
    case PatternKind::kVar:
      os << "var(" << (n.text().empty() ? "" : string_literal(n.text())) << ")";
      return;
    case PatternKind::kTuple:
      os << "(";
      print_list(os, ops);
      os << (ops.size() == 1 ? ",)" : ")");
      return;
    case PatternKind::kTupleGetItem:
      print_receiver(os, ops[0]);
      if (n.index() < 0) os << "[?]";
      else os << "[" << n.index() << "]";
      return;
    case PatternKind::kRepeated:
      os << "repeated(";
      print(os, ops[0]);
      if (!n.text().empty()) os << ", count=" << string_literal(n.text());
      os << ")";
      return;
    case PatternKind::kOr:
    case PatternKind::kAnd:
      os << "(";
      print(os, ops[0]);
      os << (n.kind() == PatternKind::kOr ? " | " : " & ");
      print(os, ops[1]);
      os << ")";
      return;
    case PatternKind::kNot:
      os << "~";
      print(os, ops[0]);
      return;
    case PatternKind::kHasDType:
      print_receiver(os, ops[0]);
      os << ".has_dtype(\"" << dtype_name(n.dtype()) << "\")";
      return;
    case PatternKind::kHasShape:
      print_receiver(os, ops[0]);
      os << ".has_shape(" << shape_to_string(n.shape()) << ")";
      return;
    case PatternKind::kHasAttr:
      print_receiver(os, ops[0]);
      os << ".has_attr(";
      print_attrs_dict(os, n.attrs());
      os << ")";
      return;
    case PatternKind::kWhere:
      print_receiver(os, ops[0]);
      os << ".where(" << n.text() << ")";
      return;
  }
}

// A named wildcard prints as its name; another named pattern as (name := p).
// Past this many characters a pattern prints its remaining sub-patterns as
// "...": a pattern object used in several places prints once per path to
// it, which nesting makes exponential, and a repr must stay readable.
constexpr std::streamoff kMaxPatternText = 4000;

void print(std::ostream& os, const Pattern& p) {
  if (!p) {
    os << "<null pattern>";
    return;
  }
  if (os.tellp() > kMaxPatternText) {
    os << "...";
    return;
  }
  const std::string& name = p->name();
  if (name.empty()) return print_unnamed(os, p);
  if (p->kind() == PatternKind::kWildcard) {
    os << name;
    return;
  }
  os << "(" << name << " := ";
  print_unnamed(os, p);
  os << ")";
}

// ---- checks of the names a pattern uses ----

// One use of a name: the run whose elements it is inside (null: none), and
// whether it names a run itself.
struct NameUse {
  const PatternNode* run;
  bool names_run;
};

thread_local int deferred_name_checks = 0;

// Each distinct (node, enclosing run) of p with names inside, once: a
// pattern object used in several places is walked once per run it is in,
// not once per path to it. Iterative, so any depth is fine.
template <class Visit>
void walk_named(const Pattern& p, Visit&& visit) {
  struct Hash {
    size_t operator()(const std::pair<const PatternNode*, const PatternNode*>& k) const {
      return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
    }
  };
  std::unordered_set<std::pair<const PatternNode*, const PatternNode*>, Hash> seen;
  std::vector<std::pair<const PatternNode*, const PatternNode*>> todo{{p.get(), nullptr}};
  while (!todo.empty()) {
    auto [node, run] = todo.back();
    todo.pop_back();
    if (!node->has_names() || !seen.insert({node, run}).second) continue;
    visit(*node, run);
    const PatternNode* inner_run = node->kind() == PatternKind::kRepeated ? node : run;
    for (auto it = node->operands().rbegin(); it != node->operands().rend(); ++it)
      todo.push_back({it->get(), inner_run});
  }
}

// Records one use of `name`, or throws when an earlier use disagrees.
void add_use(const Pattern& p, std::unordered_map<std::string, NameUse>& uses, const std::string& name,
             NameUse use, const char* what) {
  auto [it, first] = uses.emplace(name, use);
  if (first) return;
  if (it->second.run != use.run)
    throw Error(str("pattern ", p.to_string(), ": ", what, " '", name,
                    "' is used both inside and outside a repeated run, or in two runs"
                    " (a name inside a run captures one value per element of that run)"));
  if (it->second.names_run != use.names_run)
    throw Error(str("pattern ", p.to_string(), ": name '", name, "' names both a repeated run and a single value"));
}

// A pattern whose names are consistent (see pattern.h), or an aj::Error.
Pattern checked(std::shared_ptr<PatternNode> node) {
  bool has = !node->name().empty() || (node->kind() == PatternKind::kRepeated && !node->text().empty());
  for (const Pattern& o : node->operands()) has = has || o->has_names();
  F::set_has_names(*node, has);
  Pattern p(std::move(node));
  if (has && deferred_name_checks == 0) check_pattern_names(p);
  return p;
}

// Refuses a run where one value is wanted.
void check_not_run(const Pattern& p, const Where& where) {
  if (!p) throw Error(str(where, ": a pattern is null"));
  if (is_run(p))
    throw Error(str(where, ": ", p.to_string(),
                    " stands for a run of tuple fields or call args; it can only be an element of is_tuple or is_op(...)(...)"));
}

// Checks a list of args or fields: more than one run needs a shared count name.
void check_list(const std::vector<Pattern>& items, const Where& where) {
  const PatternNode* first_run = nullptr;
  for (const Pattern& item : items) {
    if (!item) throw Error(str(where, ": a pattern is null"));
    if (!is_run(item)) continue;
    check_not_run(item->operands()[0], [&] { return str(where, ": the element of ", item.to_string()); });
    if (!first_run) {
      first_run = item.get();
    } else if (first_run->text().empty() || first_run->text() != item->text()) {
      throw Error(str(where, ": two repeated runs in one list need the same count name, so that their lengths split "
                             "the list evenly (repeated(p, name, count_name))"));
    }
  }
}

std::string op_args_text(const OpDef& op) {
  std::string s;
  for (const auto& a : op.arg_names) s += (s.empty() ? "" : ", ") + a;
  return s;
}

std::string op_attrs_text(const OpDef& op) {
  std::string s;
  for (const auto& a : op.attrs) s += (s.empty() ? "" : ", ") + a.name;
  return s.empty() ? "none" : s;
}

// `attrs` checked against op's schema: names it has, values of the right kind.
std::vector<AttrConstraint> resolve(const OpDef& op, const KwAttrs& attrs, const Where& where) {
  std::vector<AttrConstraint> out;
  for (const auto& [name, value] : attrs) {
    int i = op.attr_index(name);
    if (i < 0) throw Error(str(where, ": op '", op.name, "' has no attr '", name, "' (it takes: ", op_attrs_text(op), ")"));
    try {
      out.push_back({name, i, coerce_attr(op, op.attrs[i], value)});
    } catch (const Error& e) {
      throw Error(str(where, ": ", e.what()));
    }
  }
  return out;
}

// Constraints on a tensor's type make no sense on a pattern that matches only tuples.
void check_tensor_constraint(const Pattern& p, const std::string& what) {
  check_not_run(p, [&] { return str(p.to_string(), ".", what); });
  if (p->kind() == PatternKind::kTuple)
    throw Error(str(p.to_string(), ".", what, ": a tuple has no ", what == "has_dtype" ? "dtype" : "shape"));
}

using OpsMemo = std::unordered_map<const PatternNode*, std::optional<std::vector<OpId>>>;
std::optional<std::vector<OpId>> ops_of(const Pattern& p, OpsMemo& memo);

std::optional<std::vector<OpId>> intersect(std::optional<std::vector<OpId>> a, std::optional<std::vector<OpId>> b) {
  if (!a) return b;
  if (!b) return a;
  std::vector<OpId> out;
  for (OpId id : *a)
    if (std::find(b->begin(), b->end(), id) != b->end()) out.push_back(id);
  return out;
}

// The ops of the calls p may match: nullopt for any op, an empty list when
// it matches no call. A node shared by several paths (h | h) is looked at
// once.
std::optional<std::vector<OpId>> ops_of_node(const Pattern& p, OpsMemo& memo) {
  const auto& ops = p->operands();
  switch (p->kind()) {
    case PatternKind::kCall:
      return std::vector<OpId>{p->op()->id};
    case PatternKind::kConstant:
    case PatternKind::kVar:
    case PatternKind::kTuple:
    case PatternKind::kTupleGetItem:
    case PatternKind::kRepeated:
      return std::vector<OpId>{};
    case PatternKind::kWildcard:
    case PatternKind::kNot:
      return std::nullopt;
    case PatternKind::kAnd:
      return intersect(ops_of(ops[0], memo), ops_of(ops[1], memo));
    case PatternKind::kOr: {
      auto a = ops_of(ops[0], memo), b = ops_of(ops[1], memo);
      if (!a || !b) return std::nullopt;
      for (OpId id : *b)
        if (std::find(a->begin(), a->end(), id) == a->end()) a->push_back(id);
      return a;
    }
    case PatternKind::kHasDType:
    case PatternKind::kHasShape:
    case PatternKind::kHasAttr:
    case PatternKind::kWhere:
      return ops_of(ops[0], memo);
  }
  return std::nullopt;
}

std::optional<std::vector<OpId>> ops_of(const Pattern& p, OpsMemo& memo) {
  auto it = memo.find(p.get());
  if (it != memo.end()) return it->second;
  auto ops = ops_of_node(p, memo);
  memo.emplace(p.get(), ops);
  return ops;
}

std::optional<std::vector<OpId>> ops_of(const Pattern& p) {
  OpsMemo memo;
  return ops_of(p, memo);
}

// Each name of p once, in the order a depth-first walk meets it.
void collect_capture_names(const Pattern& p, std::vector<CaptureName>& out) {
  std::unordered_set<std::string_view> names;
  walk_named(p, [&](const PatternNode& n, const PatternNode* run) {
    if (!n.name().empty() && names.insert(n.name()).second)
      out.push_back({n.name(), run != nullptr || n.kind() == PatternKind::kRepeated});
  });
}

Pattern binary(PatternKind kind, const Pattern& a, const Pattern& b, const char* symbol) {
  check_not_run(a, [&] { return str("the left side of ", symbol); });
  check_not_run(b, [&] { return str("the right side of ", symbol); });
  return checked(F::node(kind, {a, b}));
}

}  // namespace

DeferredNameChecks::DeferredNameChecks() { ++deferred_name_checks; }
DeferredNameChecks::~DeferredNameChecks() { --deferred_name_checks; }

void check_pattern_names(const Pattern& p) {
  std::unordered_map<std::string, NameUse> names, counts;
  walk_named(p, [&](const PatternNode& n, const PatternNode* run) {
    bool run_node = n.kind() == PatternKind::kRepeated;
    if (!n.name().empty()) add_use(p, names, n.name(), {run, run_node}, "name");
    if (run_node && !n.text().empty()) add_use(p, counts, n.text(), {run, true}, "count name");
  });
}

// ---- Pattern ----

Pattern Pattern::named(std::string name) const {
  if (!node_) throw Error("named: the pattern is null");
  if (name.empty()) throw Error(str(to_string(), ".named(\"\"): a capture name must not be empty"));
  auto n = F::copy(*node_);
  F::set_name(*n, std::move(name));
  return checked(std::move(n));
}

Pattern Pattern::has_dtype(DType dtype) const {
  check_tensor_constraint(*this, "has_dtype");
  auto n = F::node(PatternKind::kHasDType, {*this});
  F::set_dtype(*n, dtype);
  return checked(std::move(n));
}

Pattern Pattern::has_shape(Shape shape) const {
  check_tensor_constraint(*this, "has_shape");
  for (const Dim& d : shape)
    if (d.is_const() && d.value() < 0)
      throw Error(str(to_string(), ".has_shape(", shape_to_string(shape), "): a dim must not be negative"));
  auto n = F::node(PatternKind::kHasShape, {*this});
  F::set_shape(*n, std::move(shape));
  return checked(std::move(n));
}

Pattern Pattern::has_attr(const KwAttrs& attrs) const {
  Where where = [this] { return str(to_string(), ".has_attr(...)"); };
  check_not_run(*this, where);
  auto ops = ops_of(*this);
  if (ops && ops->empty()) throw Error(str(where, ": the pattern matches no call, and only calls have attrs"));
  std::vector<AttrConstraint> resolved;
  if (ops && ops->size() == 1) {
    resolved = resolve(OpRegistry::global().get(ops->front()), attrs, where);
  } else {
    for (const auto& [name, value] : attrs) resolved.push_back({name, -1, value});
  }
  auto n = F::node(PatternKind::kHasAttr, {*this});
  F::set_attrs(*n, std::move(resolved));
  return checked(std::move(n));
}

Pattern Pattern::where(std::string predicate_name, ExprPredicate predicate) const {
  check_not_run(*this, [&] { return str(to_string(), ".where(", predicate_name, ")"); });
  if (!predicate) throw Error(str(to_string(), ".where(", predicate_name, "): the predicate is empty"));
  auto n = F::node(PatternKind::kWhere, {*this});
  F::set_text(*n, std::move(predicate_name));
  F::set_predicate(*n, std::move(predicate));
  return checked(std::move(n));
}

std::string Pattern::to_string() const {
  if (!node_) return "<null pattern>";
  std::ostringstream os;
  print(os, *this);
  return os.str();
}

Pattern operator|(const Pattern& a, const Pattern& b) { return binary(PatternKind::kOr, a, b, "|"); }
Pattern operator&(const Pattern& a, const Pattern& b) { return binary(PatternKind::kAnd, a, b, "&"); }
Pattern operator~(const Pattern& a) {
  check_not_run(a, "~");
  return checked(F::node(PatternKind::kNot, {a}));
}

// ---- constructors ----

Pattern OpPattern::operator()(std::vector<Pattern> args, const KwAttrs& attrs) const {
  auto n = F::node(PatternKind::kCall, std::move(args));
  F::set_op(*n, op_);
  Where where = [&n] { return Pattern(n).to_string(); };
  check_list(n->operands(), where);
  size_t fixed = 0, runs = 0;
  for (const Pattern& a : n->operands()) (is_run(a) ? runs : fixed) += 1;
  size_t arity = op_.arg_names.size();
  if (runs ? fixed > arity : fixed != arity)
    throw Error(str(where, ": op '", op_.name, "' takes ", arity, " arg(s) (", op_args_text(op_), "), got ", fixed,
                    runs ? " patterns besides the runs" : " patterns"));
  F::set_attrs(*n, resolve(op_, attrs, where));
  return checked(std::move(n));
}

Pattern wildcard() { return Pattern(F::node(PatternKind::kWildcard)); }

OpPattern is_op(OpHandle op) { return OpPattern(op.def()); }

OpPattern is_op(const std::string& op_name) {
  const OpDef* op = OpRegistry::global().find(op_name);
  if (!op) throw Error(str("is_op(", string_literal(op_name), "): there is no op named '", op_name, "'",
                             OpRegistry::global().unknown_op_hint(op_name)));
  return OpPattern(*op);
}

Pattern is_const() { return Pattern(F::node(PatternKind::kConstant)); }

Pattern is_var(std::string name_hint) {
  auto n = F::node(PatternKind::kVar);
  F::set_text(*n, std::move(name_hint));
  return Pattern(std::move(n));
}

Pattern is_tuple(std::vector<Pattern> fields) {
  auto n = F::node(PatternKind::kTuple, std::move(fields));
  check_list(n->operands(), [&n] { return Pattern(n).to_string(); });
  return checked(std::move(n));
}

Pattern is_tuple_get_item(const Pattern& tuple, int index) {
  check_not_run(tuple, "is_tuple_get_item");
  if (index < -1) throw Error(str("is_tuple_get_item(", tuple.to_string(), ", ", index, "): the index must be >= 0, or -1 for any"));
  auto n = F::node(PatternKind::kTupleGetItem, {tuple});
  F::set_index(*n, index);
  return checked(std::move(n));
}

Pattern repeated(const Pattern& element, std::string name, std::string count_name) {
  check_not_run(element, "the element of repeated(...)");
  auto n = F::node(PatternKind::kRepeated, {element});
  F::set_name(*n, std::move(name));
  F::set_text(*n, std::move(count_name));
  return checked(std::move(n));
}

std::vector<OpId> root_ops(const Pattern& p) {
  auto ops = ops_of(p);
  return ops ? *ops : std::vector<OpId>{};
}

bool can_match_call(const Pattern& p) {
  auto ops = ops_of(p);
  return !ops || !ops->empty();
}

std::vector<CaptureName> capture_names(const Pattern& p) {
  std::vector<CaptureName> out;
  collect_capture_names(p, out);
  return out;
}

}  // namespace aj
