// Structural equality, hashing and diff of functions and modules, up to
// alpha-equivalence. A var stands for where it is defined (param i, or
// binding i after the params), looked up in one pointer -> index map per
// function, so comparing and hashing are linear in the size of the IR. The
// diff finds the first mismatch with the same walk and only then prints.
#include "adjoint/ir/structural.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "adjoint/ir/printer.h"
#include "adjoint/op/registry.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/support/hash.h"

namespace aj {
namespace {

// ---- hashing helpers ----

size_t scramble(size_t v) {  // spreads small ints: splitmix64's step
  return static_cast<size_t>(mix64(static_cast<uint64_t>(v) + 0x9e3779b97f4a7c15ULL));
}

size_t mix(size_t h, size_t v) { return h ^ (scramble(v) + (h << 6) + (h >> 2)); }

// Order-insensitive: a sum of per-attr hashes.
size_t func_attrs_hash(const FuncAttrs& attrs) {
  size_t h = 0;
  for (const auto& [name, value] : attrs)
    h += mix(std::hash<std::string>()(name), attr_hash(value));
  return h;
}

// The definition index of a var the function does not define.
constexpr int64_t kFree = VarIndexMap::kAbsent;

// ---- equality ----

bool func_attrs_equal(const FuncAttrs& a, const FuncAttrs& b) {
  if (a.size() != b.size()) return false;
  for (const auto& entry : a) {
    auto it = std::find_if(b.begin(), b.end(), [&](const auto& kv) { return kv.first == entry.first; });
    if (it == b.end() || !attr_equal(entry.second, it->second)) return false;
  }
  return true;
}

bool ndarray_equal(const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.data() == b.data() || a.nbytes() == 0) return true;
  return std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

bool same_op(const OpDef& a, const OpDef& b) { return &a == &b || a.name == b.name; }

// Compares exprs of two functions, matching vars by definition index; vars
// neither function defines match only themselves.
class ExprEqual {
 public:
  ExprEqual(const VarIndexMap& a, const VarIndexMap& b) : a_(a), b_(b) {}

  bool operator()(const Expr& x, const Expr& y) const {
    if (x->kind() != y->kind()) return false;
    switch (x->kind()) {
      case ExprKind::kVar: return var(as<VarNode>(x), as<VarNode>(y));
      case ExprKind::kConstant:
        return x == y || ndarray_equal(as<ConstantNode>(x)->data(), as<ConstantNode>(y)->data());
      case ExprKind::kCall: return call(*as<CallNode>(x), *as<CallNode>(y));
      case ExprKind::kTuple: return all(as<TupleNode>(x)->fields(), as<TupleNode>(y)->fields());
      case ExprKind::kTupleGetItem: {
        const auto* g = as<TupleGetItemNode>(x);
        const auto* h = as<TupleGetItemNode>(y);
        return g->index() == h->index() && (*this)(g->tuple(), h->tuple());
      }
    }
    return false;
  }

 private:
  bool var(const VarNode* x, const VarNode* y) const {
    int64_t i = a_(x), j = b_(y);
    return i == j && (i != kFree || x == y);
  }

  bool call(const CallNode& x, const CallNode& y) const {
    if (!same_op(x.op(), y.op()) || !all(x.args(), y.args())) return false;
    if (x.attrs().size() != y.attrs().size()) return false;
    for (size_t i = 0; i < x.attrs().size(); ++i)
      if (!attr_equal(x.attrs()[i], y.attrs()[i])) return false;
    return true;
  }

  bool all(const std::vector<Expr>& xs, const std::vector<Expr>& ys) const {
    if (xs.size() != ys.size()) return false;
    for (size_t i = 0; i < xs.size(); ++i)
      if (!(*this)(xs[i], ys[i])) return false;
    return true;
  }

  const VarIndexMap& a_;
  const VarIndexMap& b_;
};

// ---- hashing ----

size_t ndarray_hash(const NDArray& a) {
  size_t h = mix(static_cast<size_t>(a.dtype()), a.shape().size());
  for (int64_t d : a.shape()) h = mix(h, static_cast<size_t>(d));
  if (a.nbytes() == 0) return h;
  std::string_view bytes(static_cast<const char*>(a.data()), a.nbytes());
  return mix(h, std::hash<std::string_view>()(bytes));
}

// Hashes exprs consistently with ExprEqual: a var by its definition index.
class ExprHasher {
 public:
  explicit ExprHasher(const VarIndexMap& defs) : defs_(defs) {}

  size_t operator()(const Expr& e) const {
    size_t h = static_cast<size_t>(e->kind()) + 1;
    switch (e->kind()) {
      case ExprKind::kVar: {
        int64_t i = defs_(as<VarNode>(e));
        return mix(h, i == kFree ? mix(type_hash(e->type()), 0xf7ee) : static_cast<size_t>(i));
      }
      case ExprKind::kConstant: return mix(h, ndarray_hash(as<ConstantNode>(e)->data()));
      case ExprKind::kCall: {
        const auto* c = as<CallNode>(e);
        h = mix(h, std::hash<std::string>()(c->op().name));
        h = all(h, c->args());
        for (const auto& a : c->attrs()) h = mix(h, attr_hash(a));
        return h;
      }
      case ExprKind::kTuple: return all(h, as<TupleNode>(e)->fields());
      case ExprKind::kTupleGetItem: {
        const auto* g = as<TupleGetItemNode>(e);
        return mix(mix(h, static_cast<size_t>(g->index())), (*this)(g->tuple()));
      }
    }
    return h;
  }

 private:
  size_t all(size_t h, const std::vector<Expr>& xs) const {
    h = mix(h, xs.size());
    for (const auto& x : xs) h = mix(h, (*this)(x));
    return h;
  }

  const VarIndexMap& defs_;
};

// ---- first mismatch ----

enum class Where {
  kAttrs,
  kParamCount,
  kParamType,
  kBindingCount,
  kBindingType,
  kBindingValue,
  kReturn,
};

struct Mismatch {
  Where where;
  size_t index = 0;  // of the param or binding
};

// The first difference in print order: decorator, signature, bindings, return.
std::optional<Mismatch> first_mismatch(const FunctionNode& a, const FunctionNode& b) {
  if (!func_attrs_equal(a.attrs(), b.attrs())) return Mismatch{Where::kAttrs};
  size_t np = std::min(a.params().size(), b.params().size());
  for (size_t i = 0; i < np; ++i)
    if (!type_equal(a.params()[i]->type(), b.params()[i]->type()))
      return Mismatch{Where::kParamType, i};
  if (a.params().size() != b.params().size()) return Mismatch{Where::kParamCount, np};

  VarIndexMap da(a), db(b);
  ExprEqual eq(da, db);
  size_t nb = std::min(a.bindings().size(), b.bindings().size());
  for (size_t i = 0; i < nb; ++i) {
    const Binding& x = a.bindings()[i];
    const Binding& y = b.bindings()[i];
    if (!type_equal(x.var->type(), y.var->type())) return Mismatch{Where::kBindingType, i};
    if (!eq(x.value, y.value)) return Mismatch{Where::kBindingValue, i};
  }
  if (a.bindings().size() != b.bindings().size()) return Mismatch{Where::kBindingCount, nb};
  if (!eq(a.ret(), b.ret())) return Mismatch{Where::kReturn};
  return std::nullopt;
}

// ---- diff messages ----

std::string two_lines(const std::string& lhs, const std::string& rhs) {
  std::string out = "\n  lhs: " + lhs + "\n  rhs: " + rhs;
  if (lhs == rhs)
    out += "\n  (both print alike: a var refers to a different definition, "
           "or constant bits differ)";
  return out;
}

// "lv3" from "lv3: Tensor(...) = ..."; printed names hold no ':'.
std::string bound_name(const std::string& line) { return line.substr(0, line.find(':')); }

std::string describe(const std::string& where, const std::string& name, const Function& a,
                     const Function& b, const Mismatch& m) {
  switch (m.where) {
    case Where::kAttrs:
      return where + "attrs differ" + two_lines(print_decorator(a), print_decorator(b));
    case Where::kParamType:
      return where + "params: param " + std::to_string(m.index) + " types differ" +
             two_lines(print_signature(name, a), print_signature(name, b));
    case Where::kParamCount:
      return where + "params: " + std::to_string(a->params().size()) + " vs " +
             std::to_string(b->params().size()) + " params" +
             two_lines(print_signature(name, a), print_signature(name, b));
    case Where::kBindingCount:
      return where + "binding " + std::to_string(m.index) + ": " +
             std::to_string(a->bindings().size()) + " vs " + std::to_string(b->bindings().size()) +
             " bindings" + two_lines(print_binding(a, m.index), print_binding(b, m.index));
    case Where::kBindingType:
    case Where::kBindingValue: {
      std::string lhs = print_binding(a, m.index), rhs = print_binding(b, m.index);
      return where + "binding " + std::to_string(m.index) + " (" + bound_name(lhs) + " vs " +
             bound_name(rhs) + "): " +
             (m.where == Where::kBindingType ? "var types differ" : "values differ") +
             two_lines(lhs, rhs);
    }
    case Where::kReturn:
      return where + "return differs" + two_lines(print_return(a), print_return(b));
  }
  return where + "differs";
}

std::string missing(const std::string& name, const Function& fn, bool in_lhs) {
  std::string sig = print_signature(name, fn);
  return "missing function '" + name + "': only in " + (in_lhs ? "lhs" : "rhs") +
         two_lines(in_lhs ? sig : "<absent>", in_lhs ? "<absent>" : sig);
}

}  // namespace

bool structural_equal(const Function& a, const Function& b) {
  return a == b || (a && b && !first_mismatch(*a, *b));
}

bool structural_equal(const Module& a, const Module& b) {
  if (a == b) return true;
  if (!a || !b || a->functions().size() != b->functions().size()) return false;
  for (const auto& [name, fa] : a->functions()) {
    Function fb = b->lookup(name);
    if (!fb || !structural_equal(fa, fb)) return false;
  }
  return true;
}

size_t structural_hash(const Function& f) {
  if (!f) return 0;
  VarIndexMap defs(*f);
  ExprHasher hasher(defs);
  size_t h = mix(0x5eed, f->params().size());
  for (const auto& p : f->params()) h = mix(h, type_hash(p->type()));
  h = mix(h, f->bindings().size());
  for (const auto& b : f->bindings()) {
    h = mix(h, type_hash(b.var->type()));
    h = mix(h, hasher(b.value));
  }
  h = mix(h, hasher(f->ret()));
  return mix(h, func_attrs_hash(f->attrs()));
}

size_t structural_hash(const Module& m) {
  if (!m) return 0;
  std::vector<const std::pair<std::string, Function>*> fns;
  fns.reserve(m->functions().size());
  for (const auto& kv : m->functions()) fns.push_back(&kv);
  std::sort(fns.begin(), fns.end(),
            [](const auto* x, const auto* y) { return x->first < y->first; });
  size_t h = mix(0x30d, fns.size());
  for (const auto* kv : fns) {
    h = mix(h, std::hash<std::string>()(kv->first));
    h = mix(h, structural_hash(kv->second));
  }
  return h;
}

std::optional<std::string> structural_diff(const Function& a, const Function& b) {
  if (a == b) return std::nullopt;
  if (!a || !b) return std::string("function: one side is null");
  auto m = first_mismatch(*a, *b);
  if (!m) return std::nullopt;
  return describe("function: ", "fn", a, b, *m);
}

std::optional<std::string> structural_diff(const Module& a, const Module& b) {
  if (a == b) return std::nullopt;
  if (!a || !b) return std::string("module: one side is null");
  for (const auto& [name, fa] : a->functions()) {
    Function fb = b->lookup(name);
    if (!fb) return missing(name, fa, true);
    if (fa == fb) continue;
    if (auto m = first_mismatch(*fa, *fb))
      return describe("function '" + name + "': ", name, fa, fb, *m);
  }
  for (const auto& [name, fb] : b->functions())
    if (!a->contains(name)) return missing(name, fb, false);
  return std::nullopt;
}

}  // namespace aj
