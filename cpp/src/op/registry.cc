// The op registry, the type-rule context helpers, and attr checking.
#include "adjoint/op/registry.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "families.h"

namespace aj {

const char* attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "an int";
    case AttrKind::kFloat: return "a float";
    case AttrKind::kBool: return "a bool";
    case AttrKind::kString: return "a string";
    case AttrKind::kDType: return "a dtype";
    case AttrKind::kOptDType: return "a dtype or None";
    case AttrKind::kIntList: return "a list of ints";
    case AttrKind::kOptIntList: return "None or a list of ints";
    case AttrKind::kShape: return "a shape (a tuple of dims)";
    case AttrKind::kIntOrIntList: return "an int or a list of ints (or dims)";
    case AttrKind::kReshapeShape: return "a shape (a tuple of dims, one may be -1)";
  }
  return "?";
}

namespace {

constexpr OpHandle kOps[] = {
#define AJ_OP(family, name) ops::name,
#include "adjoint/op/op_list.def"
#undef AJ_OP
};

}  // namespace

const char* op_name(OpId id) { return kOps[static_cast<size_t>(id)].name(); }

const OpDef& OpHandle::def() const { return OpRegistry::global().get(id_); }

Call OpHandle::operator()(std::vector<Expr> args, const KwAttrs& attrs) const {
  const OpDef& op = def();
  return make_call(op, std::move(args), resolve_attrs(op, {}, attrs));
}

bool operator==(const OpDef& def, OpHandle op) { return def.id == op.id(); }

bool is_call_of(const CallNode* c, OpHandle op) { return c && c->op().id == op.id(); }

OpRegistry::OpRegistry() : by_id_(kNumOps, nullptr) {
  for (const OpFamily& family : kOpFamilies) {
    defining_family_ = family.name;
    family.define_ops(*this);
  }
  defining_family_ = nullptr;
  for (const OpHandle& op : kOps)
    if (!by_id_[static_cast<size_t>(op.id())])
      throw Error(str("op '", op.name(), "' is listed in op_list.def under family '", op.family(),
                      "' but that family does not define it"));
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* reg = new OpRegistry();
  return *reg;
}

OpDef& OpRegistry::define(OpHandle op) {
  if (!defining_family_ || std::strcmp(op.family(), defining_family_) != 0)
    throw Error(str("op '", op.name(), "' is listed in op_list.def under family '", op.family(),
                    "' but ", defining_family_ ? str("family '", defining_family_, "'") : std::string("no family"),
                    " defines it"));
  auto def = std::make_unique<OpDef>();
  def->name = op.name();
  def->id = op.id();
  def->family = op.family();
  OpDef* raw = def.get();
  if (!ops_.emplace(op.name(), std::move(def)).second) throw Error(str("op '", op.name(), "' defined twice"));
  order_.push_back(raw);
  by_id_[static_cast<size_t>(op.id())] = raw;
  return *raw;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& OpRegistry::get(const std::string& name) const {
  const OpDef* op = find(name);
  if (!op) throw Error(str("unknown op '", name, "'", unknown_op_hint(name)));
  return *op;
}

namespace {

// Levenshtein distance of a and b, counting up to `cap` (a larger distance
// comes out as cap + 1).
size_t edit_distance(const std::string& a, const std::string& b, size_t cap) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > cap) return cap + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return std::min(row[b.size()], cap + 1);
}

}  // namespace

std::string OpRegistry::unknown_op_hint(const std::string& name) const {
  size_t dot = name.rfind('.');
  std::string bare = dot == std::string::npos ? name : name.substr(dot + 1);
  if (bare != name && find(bare)) return str(" (op names have no prefix such as TVM's 'relax.': '", bare, "')");
  const size_t cap = std::max<size_t>(1, bare.size() / 3);
  const OpDef *nearest = nullptr, *starting = nullptr;  // starting: the one op whose name starts with bare
  size_t best = cap + 1, num_starting = 0;
  bool tie = false;
  for (const OpDef* op : order_) {
    size_t d = edit_distance(bare, op->name, cap);
    if (d < best) best = d, nearest = op, tie = false;
    else if (d == best && d <= cap) tie = true;
    if (bare.size() >= 3 && op->name.rfind(bare, 0) == 0) starting = op, ++num_starting;
  }
  if (!nearest && num_starting == 1) nearest = starting;  // "permute" for permute_dims
  return nearest && !tie ? str(" (did you mean '", nearest->name, "'?)") : "";
}

int OpDef::attr_index(const std::string& attr_name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == attr_name) return static_cast<int>(i);
  return -1;
}

// ---- TypeContext ----

const std::string& TypeContext::op_name() const { return op.name; }

const TypeNode& TypeContext::tensor(size_t i) const {
  const Type& t = args[i]->type();
  if (!t->is_tensor())
    fail("argument '", op.arg_names[i], "' must be a tensor, got ", t->to_string());
  return *t;
}

const AttrValue& lookup_attr(const OpDef& op, const Attrs& attrs, const std::string& name) {
  int i = op.attr_index(name);
  if (i < 0) throw Error(str("op '", op.name, "' has no attr '", name, "'"));
  return attrs[i];
}

// ---- attr checking ----

namespace {

[[noreturn]] void bad_attr(const OpDef& op, const AttrSpec& spec, const AttrValue& raw) {
  throw TypeInferenceError(str("op '", op.name, "': attr '", spec.name, "' expects ",
                               attr_kind_name(spec.kind), ", got ", attr_to_string(raw)));
}

std::optional<DType> as_dtype(const AttrValue& raw) {
  if (auto* t = std::get_if<DType>(&raw)) return *t;
  if (auto* s = std::get_if<std::string>(&raw)) return dtype_from_name(*s);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> as_int_list(const AttrValue& raw) {
  if (auto* l = std::get_if<std::vector<int64_t>>(&raw)) return *l;
  if (auto* i = std::get_if<int64_t>(&raw)) return std::vector<int64_t>{*i};
  if (auto* s = std::get_if<Shape>(&raw)) {  // (1, 2) written as a tuple
    std::vector<int64_t> out;
    for (const auto& d : *s) {
      if (!d.is_const()) return std::nullopt;
      out.push_back(d.value());
    }
    return out;
  }
  return std::nullopt;
}

// Dims of a shape must be non-negative; a reshape target may hold one -1.
void check_shape_dims(const OpDef& op, const AttrSpec& spec, const Shape& shape) {
  bool inferred = false;
  for (const auto& d : shape) {
    if (!d.is_const() || d.value() >= 0) continue;
    bool may_infer = spec.kind == AttrKind::kReshapeShape && d.value() == -1;
    if (may_infer && !inferred) {
      inferred = true;
      continue;
    }
    throw TypeInferenceError(str("op '", op.name, "': attr '", spec.name, "' ",
                                 may_infer ? std::string("has more than one -1 dim")
                                           : str("has a negative dim ", d.value())));
  }
}

std::optional<Shape> as_shape(const AttrValue& raw) {
  if (auto* s = std::get_if<Shape>(&raw)) return *s;
  if (auto* l = std::get_if<std::vector<int64_t>>(&raw)) return Shape(l->begin(), l->end());
  if (auto* i = std::get_if<int64_t>(&raw)) return Shape{Dim(*i)};
  return std::nullopt;
}

}  // namespace

AttrValue coerce_attr(const OpDef& op, const AttrSpec& spec, const AttrValue& raw) {
  bool is_none = std::holds_alternative<NoneValue>(raw);
  switch (spec.kind) {
    case AttrKind::kInt:
      if (std::holds_alternative<int64_t>(raw)) return raw;
      break;
    case AttrKind::kFloat:
      if (std::holds_alternative<double>(raw)) return raw;
      if (auto* i = std::get_if<int64_t>(&raw)) return static_cast<double>(*i);
      break;
    case AttrKind::kBool:
      if (std::holds_alternative<bool>(raw)) return raw;
      break;
    case AttrKind::kString:
      if (std::holds_alternative<std::string>(raw)) return raw;
      break;
    case AttrKind::kOptDType:
      if (is_none) return raw;
      [[fallthrough]];
    case AttrKind::kDType:
      if (auto t = as_dtype(raw)) return *t;
      break;
    case AttrKind::kOptIntList:
      if (is_none) return raw;
      [[fallthrough]];
    case AttrKind::kIntList:
      if (auto l = as_int_list(raw)) return *l;
      break;
    case AttrKind::kShape:
    case AttrKind::kReshapeShape:
      if (auto s = as_shape(raw)) {
        check_shape_dims(op, spec, *s);
        return *s;
      }
      break;
    case AttrKind::kIntOrIntList:
      if (std::holds_alternative<int64_t>(raw)) return raw;
      if (auto l = as_int_list(raw)) return *l;
      if (auto* s = std::get_if<Shape>(&raw)) return *s;  // symbolic entries stay dims
      break;
  }
  bad_attr(op, spec, raw);
}

Attrs resolve_attrs(const OpDef& op, const std::vector<AttrValue>& positional,
                    const std::vector<std::pair<std::string, AttrValue>>& keyword) {
  if (positional.size() > op.attrs.size())
    throw TypeInferenceError(str("op '", op.name, "' takes ", op.arg_names.size(),
                                 " argument(s) and ", op.attrs.size(), " attr(s), got ",
                                 op.arg_names.size() + positional.size(), " positional values"));
  std::vector<std::optional<AttrValue>> slots(op.attrs.size());
  for (size_t i = 0; i < positional.size(); ++i) slots[i] = positional[i];
  for (const auto& kv : keyword) {
    int i = op.attr_index(kv.first);
    if (i < 0) {
      std::string known;
      for (const auto& a : op.attrs) known += (known.empty() ? "" : ", ") + a.name;
      throw TypeInferenceError(str("op '", op.name, "' has no attr '", kv.first, "'",
                                   known.empty() ? std::string(" (it takes none)")
                                                 : " (it takes: " + known + ")"));
    }
    if (slots[i]) throw TypeInferenceError(str("op '", op.name, "': attr '", kv.first, "' given twice"));
    slots[i] = kv.second;
  }
  Attrs out;
  out.reserve(op.attrs.size());
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const AttrSpec& spec = op.attrs[i];
    if (slots[i]) out.push_back(coerce_attr(op, spec, *slots[i]));
    else if (spec.default_value) out.push_back(*spec.default_value);
    else throw TypeInferenceError(str("op '", op.name, "': missing required attr '", spec.name, "'"));
  }
  return out;
}

}  // namespace aj
