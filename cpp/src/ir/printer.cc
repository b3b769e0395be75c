// The text-format printer (DESIGN.md §3; canonical form in printer.h). Each
// function is written into one string in a single pass after its vars are
// named; floats use the shortest round-trip digits in Python repr style, so
// the parser reads back exactly the values printed.
#include "adjoint/ir/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <type_traits>
#include <string_view>
#include <unordered_map>

#include "adjoint/ir/names.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/op/registry.h"

namespace aj {
namespace {

// ---- numbers ----

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// A finite float as sign, shortest round-trip digits d0 d1 d2 ... and the
// decimal exponent of d0: 1.25e-05 is {false, "125", -5}.
struct Decimal {
  bool negative;
  std::string digits;
  int exp;
};

template <typename T>
Decimal shortest_decimal(T v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);  // "-1.25e-05", "0e+00"
  Decimal d{sci.front() == '-', "", 0};
  if (d.negative) sci.remove_prefix(1);
  size_t e_pos = sci.find('e');
  d.digits.assign(1, sci[0]);
  if (e_pos > 1) d.digits.append(sci.substr(2, e_pos - 2));
  std::from_chars(sci.data() + e_pos + 2, sci.data() + sci.size(), d.exp);
  if (sci[e_pos + 1] == '-') d.exp = -d.exp;
  return d;
}

// Python's repr(float) layout: fixed notation when the exponent is in
// [-4, 16) (0.0001 and 1e+15 fixed, 1e-05 and 1e+16 not), else d.ddde+XX
// with at least two exponent digits.
std::string python_layout(const Decimal& d) {
  std::string out = d.negative ? "-" : "";
  const std::string& digits = d.digits;
  if (d.exp >= 16 || d.exp < -4) {
    out += digits[0];
    if (digits.size() > 1) out.append(".").append(digits, 1);
    out += d.exp < 0 ? "e-" : "e+";
    int mag = d.exp < 0 ? -d.exp : d.exp;
    if (mag < 10) out += '0';
    return out + std::to_string(mag);
  }
  if (d.exp < 0) {
    return out.append("0.").append(static_cast<size_t>(-d.exp - 1), '0').append(digits);
  }
  size_t int_len = static_cast<size_t>(d.exp) + 1;
  if (digits.size() <= int_len) {
    return out.append(digits).append(int_len - digits.size(), '0').append(".0");
  }
  return out.append(digits, 0, int_len).append(".").append(digits, int_len);
}

// A NaN as the parser reads it back bit for bit: "nan", "-nan" with the
// sign bit, "nan(0x...)" with another payload than the default quiet NaN's.
template <typename T>
std::string nan_text(T v) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  constexpr int kSignificand = std::numeric_limits<T>::digits - 1;
  Bits bits;
  std::memcpy(&bits, &v, sizeof bits);
  Bits payload = bits & ((Bits{1} << kSignificand) - 1);
  std::string out = std::signbit(v) ? "-nan" : "nan";
  if (payload == Bits{1} << (kSignificand - 1)) return out;
  static const char* hex = "0123456789abcdef";
  std::string digits;
  for (; payload; payload >>= 4) digits.insert(digits.begin(), hex[payload & 15]);
  return out + "(0x" + digits + ")";
}

template <typename T>
std::string python_float_repr(T v) {
  if (std::isnan(v)) return nan_text(v);
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return python_layout(shortest_decimal(v));
}

// ---- types ----

void append_type(std::string& out, const TypeNode& t) {
  if (t.is_tuple()) {
    out += "Tuple(";
    for (size_t i = 0; i < t.fields().size(); ++i) {
      if (i) out += ", ";
      append_type(out, *t.fields()[i]);
    }
    out += ')';
    return;
  }
  out += "Tensor((";
  const Shape& shape = t.shape();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    if (shape[i].is_const()) append_int(out, shape[i].value());
    else out.append("\"").append(shape[i].to_string()).append("\"");
  }
  if (shape.size() == 1) out += ',';
  out.append("), \"").append(dtype_name(t.dtype())).append("\")");
}

// ---- var names ----

// A usable identifier for a name hint: "lv" for an empty hint, other
// characters replaced by '_', a leading digit or a keyword guarded by '_'.
std::string sanitize(std::string_view hint) {
  if (hint.empty()) return "lv";
  std::string s(hint);
  for (char& c : s)
    if (!is_name_char(c)) c = '_';
  if (s[0] >= '0' && s[0] <= '9') s.insert(s.begin(), '_');
  if (is_python_keyword(s)) s += '_';
  return s;
}

// An open-addressing set of names, viewing strings that outlive it; sized
// for at most `n` names. Flat, so hashing 100k names takes no allocation each.
class NameSet {
 public:
  explicit NameSet(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    slots_.resize(cap);
  }

  bool insert(std::string_view name) {  // false when present
    size_t s = find(name);
    if (!slots_[s].empty()) return false;
    slots_[s] = name;
    return true;
  }
  bool contains(std::string_view name) const { return !slots_[find(name)].empty(); }

 private:
  // The slot holding `name`, or the empty slot where it would go (names are never empty).
  size_t find(std::string_view name) const {
    size_t mask = slots_.size() - 1;
    for (size_t s = std::hash<std::string_view>()(name) & mask;; s = (s + 1) & mask)
      if (slots_[s].empty() || slots_[s] == name) return s;
  }

  std::vector<std::string_view> slots_;
};

// The printed name of every var a function defines: its name hint (made an
// identifier if need be), made unique by _1, _2, ... suffixes that collide
// with no hint in the function. Vars it does not define print their hint.
class VarNames {
 public:
  explicit VarNames(const FunctionNode& fn) : index_(fn) {
    std::vector<const VarNode*> vars;
    vars.reserve(fn.params().size() + fn.bindings().size());
    for (const auto& p : fn.params()) vars.push_back(p.get());
    for (const auto& b : fn.bindings()) vars.push_back(b.var.get());
    names_ = base_names(vars);
    make_unique(vars);
  }

  std::string_view operator()(const VarNode* v) const {
    int64_t i = index_(v);
    return i == VarIndexMap::kAbsent ? std::string_view(v->name_hint()) : names_[i];
  }

 private:
  std::vector<std::string_view> base_names(const std::vector<const VarNode*>& vars) {
    std::vector<std::string_view> hints;
    hints.reserve(vars.size());
    for (const VarNode* v : vars) {
      const std::string& h = v->name_hint();
      if (is_valid_name(h)) hints.emplace_back(h);
      else hints.emplace_back(store(sanitize(h)));
    }
    return hints;
  }

  // Renames every var whose hint an earlier var already took.
  void make_unique(const std::vector<const VarNode*>& vars) {
    NameSet hints(names_.size());
    bool distinct = true;
    for (std::string_view h : names_) distinct = hints.insert(h) && distinct;
    if (distinct) return;
    NameSet taken(names_.size());
    std::unordered_map<std::string_view, size_t> next_suffix;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (index_(vars[i]) != static_cast<int64_t>(i)) continue;  // defined twice: first name holds
      if (taken.insert(names_[i])) continue;
      names_[i] = fresh(names_[i], hints, taken, next_suffix[names_[i]]);
    }
  }

  // hint_k for the next k whose name is neither a hint nor taken.
  std::string_view fresh(std::string_view hint, const NameSet& hints, NameSet& taken,
                         size_t& suffix) {
    std::string candidate;
    do {
      candidate.assign(hint).append("_").append(std::to_string(++suffix));
    } while (hints.contains(candidate) || taken.contains(candidate));
    std::string_view name = store(std::move(candidate));
    taken.insert(name);
    return name;
  }

  std::string_view store(std::string s) {
    generated_.push_back(std::move(s));
    return generated_.back();
  }

  VarIndexMap index_;
  std::vector<std::string_view> names_;  // by definition index
  std::deque<std::string> generated_;
};

// ---- exprs and functions ----

class FunctionPrinter {
 public:
  FunctionPrinter(const FunctionNode& fn, std::string& out) : fn_(fn), names_(fn), out_(out) {}

  void print(const std::string& name) {
    decorator();
    out_ += '\n';
    signature(name);
    out_ += '\n';
    for (size_t i = 0; i < fn_.bindings().size(); ++i) {
      out_ += "    ";
      binding(i);
      out_ += '\n';
    }
    out_ += "    ";
    ret();
    out_ += '\n';
  }

  void decorator() {
    out_ += "@function";
    if (fn_.attrs().empty()) return;
    out_ += '(';
    for (size_t i = 0; i < fn_.attrs().size(); ++i) {
      const auto& [name, value] = fn_.attrs()[i];
      if (i) out_ += ", ";
      out_.append(name).append("=");
      out_.append(attr_to_string(name == "frozen" ? frozen_as_printed(value) : value));
    }
    out_ += ')';
  }

  // The frozen attr with each name that is one param's replaced by the
  // name that param prints as (a hint made an identifier, or made unique:
  // x.y prints as x_y, so frozen="x.y" as frozen="x_y"), so the text reads
  // back to the function printed. Other names (a malformed attr) stay, and
  // so does the attr as written when no name is renamed.
  AttrValue frozen_as_printed(const AttrValue& value) const {
    const auto* text = std::get_if<std::string>(&value);
    if (!text) return value;
    std::unordered_map<std::string_view, const VarNode*> params;
    for (const Var& p : fn_.params()) {
      if (!p) continue;
      auto [it, fresh] = params.emplace(p->name_hint(), p.get());
      if (!fresh) it->second = nullptr;  // a name two params have names neither
    }
    std::string printed;
    bool renamed = false;
    for (const std::string& n : split_frozen_names(*text)) {
      auto it = params.find(n);
      std::string_view as_printed = it != params.end() && it->second ? names_(it->second) : std::string_view(n);
      renamed = renamed || as_printed != n;
      printed.append(printed.empty() ? "" : ", ").append(as_printed);
    }
    return renamed ? AttrValue(printed) : value;
  }

  void signature(const std::string& name) {
    out_.append("def ").append(name).append("(");
    for (size_t i = 0; i < fn_.params().size(); ++i) {
      if (i) out_ += ", ";
      typed_var(*fn_.params()[i]);
    }
    out_ += ") -> ";
    append_type(out_, *fn_.ret_type());
    out_ += ':';
  }

  void binding(size_t i) {
    const Binding& b = fn_.bindings()[i];
    typed_var(*b.var);
    out_ += " = ";
    expr(b.value);
  }

  void ret() {
    out_ += "return ";
    expr(fn_.ret());
  }

 private:
  void typed_var(const VarNode& v) {
    out_.append(names_(&v)).append(": ");
    append_type(out_, *v.type());
  }

  void expr(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar: out_.append(names_(static_cast<const VarNode*>(e.get()))); return;
      case ExprKind::kConstant: constant(static_cast<const ConstantNode&>(*e).data()); return;
      case ExprKind::kCall: call(static_cast<const CallNode&>(*e)); return;
      case ExprKind::kTuple: tuple(static_cast<const TupleNode&>(*e)); return;
      case ExprKind::kTupleGetItem: item(static_cast<const TupleGetItemNode&>(*e)); return;
    }
  }

  // op(args..., required attrs..., name=value for attrs differing from their default)
  void call(const CallNode& c) {
    const OpDef& op = c.op();
    out_.append(op.name).append("(");
    bool first = true;
    auto sep = [&] {
      if (!first) out_ += ", ";
      first = false;
    };
    for (const auto& a : c.args()) {
      sep();
      expr(a);
    }
    size_t n = std::min(op.attrs.size(), c.attrs().size());
    for (size_t i = 0; i < n; ++i) {
      if (op.attrs[i].default_value) continue;
      sep();
      out_.append(attr_to_string(c.attrs()[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      const auto& def = op.attrs[i].default_value;
      if (!def || attr_equal(c.attrs()[i], *def)) continue;
      sep();
      out_.append(op.attrs[i].name).append("=").append(attr_to_string(c.attrs()[i]));
    }
    out_ += ')';
  }

  void tuple(const TupleNode& t) {
    out_ += '(';
    for (size_t i = 0; i < t.fields().size(); ++i) {
      if (i) out_ += ", ";
      expr(t.fields()[i]);
    }
    if (t.fields().size() == 1) out_ += ',';
    out_ += ')';
  }

  void item(const TupleGetItemNode& g) {
    expr(g.tuple());
    out_ += '[';
    append_int(out_, g.index());
    out_ += ']';
  }

  // const(nested lists, "dtype"), and shape=(...) when the lists cannot
  // show it: a zero dim before the last one ([] for shape (0, 3)).
  void constant(const NDArray& a) {
    out_ += "const(";
    int64_t flat = 0;
    elements(a, 0, flat);
    out_.append(", \"").append(dtype_name(a.dtype())).append("\"");
    const auto& shape = a.shape();
    bool hidden = false;
    for (size_t i = 0; i + 1 < shape.size(); ++i) hidden = hidden || shape[i] == 0;
    if (hidden) {
      out_ += ", shape=(";
      for (size_t i = 0; i < shape.size(); ++i) {
        if (i) out_ += ", ";
        append_int(out_, shape[i]);
      }
      if (shape.size() == 1) out_ += ',';
      out_ += ')';
    }
    out_ += ')';
  }

  // The value as nested lists, one level per dim; a scalar at rank 0.
  void elements(const NDArray& a, size_t dim, int64_t& flat) {
    if (dim == a.shape().size()) {
      scalar(a, flat++);
      return;
    }
    out_ += '[';
    for (int64_t i = 0; i < a.shape()[dim]; ++i) {
      if (i) out_ += ", ";
      elements(a, dim + 1, flat);
    }
    out_ += ']';
  }

  void scalar(const NDArray& a, int64_t i) {
    switch (a.dtype()) {
      case DType::kFloat32: out_ += format_float32(a.data_as<const float>()[i]); return;
      case DType::kFloat64: out_ += format_double(a.data_as<const double>()[i]); return;
      case DType::kInt32: append_int(out_, a.data_as<const int32_t>()[i]); return;
      case DType::kInt64: append_int(out_, a.data_as<const int64_t>()[i]); return;
      case DType::kBool: out_ += a.data_as<const uint8_t>()[i] ? "True" : "False"; return;
    }
  }

  const FunctionNode& fn_;
  VarNames names_;
  std::string& out_;
};

size_t estimated_size(const FunctionNode& fn) {
  return 128 + 64 * fn.params().size() + 96 * fn.bindings().size();
}

}  // namespace

std::string format_double(double v) { return python_float_repr(v); }
std::string format_float32(float v) { return python_float_repr(v); }

std::string print_type(const Type& type) {
  std::string out;
  append_type(out, *type);
  return out;
}

std::string print_function(const std::string& name, const Function& fn) {
  std::string out;
  out.reserve(estimated_size(*fn));
  FunctionPrinter(*fn, out).print(name);
  return out;
}

std::string print_module(const Module& mod) {
  size_t size = 0;
  for (const auto& [name, fn] : mod->functions()) size += estimated_size(*fn);
  std::string out;
  out.reserve(size);
  bool first = true;
  for (const auto& [name, fn] : mod->functions()) {
    if (!first) out += '\n';
    first = false;
    FunctionPrinter(*fn, out).print(name);
  }
  return out;
}

std::string print_decorator(const Function& fn) {
  std::string out;
  FunctionPrinter(*fn, out).decorator();
  return out;
}

std::string print_signature(const std::string& name, const Function& fn) {
  std::string out;
  FunctionPrinter(*fn, out).signature(name);
  return out;
}

std::string print_binding(const Function& fn, size_t index) {
  if (index >= fn->bindings().size()) return "<no binding " + std::to_string(index) + ">";
  std::string out;
  FunctionPrinter(*fn, out).binding(index);
  return out;
}

std::string print_return(const Function& fn) {
  std::string out;
  FunctionPrinter(*fn, out).ret();
  return out;
}

std::vector<std::string> printed_param_names(const FunctionNode& fn) {
  VarNames names(fn);
  std::vector<std::string> out;
  out.reserve(fn.params().size());
  for (const Var& p : fn.params()) out.emplace_back(names(p.get()));
  return out;
}

}  // namespace aj
