// Literal syntax to IR values (see literals.h). Numbers are converted with
// std::from_chars: exact, locale-independent, and range-checked.
#include "literals.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace aj::text {
namespace {

std::string node_text(const Node& n) {
  std::string sign = n.negative ? "-" : "";
  switch (n.kind) {
    case NodeKind::kName: return quote(n.text);
    case NodeKind::kInt: case NodeKind::kFloat: return sign + std::string(n.text);
    case NodeKind::kString: return "\"" + escape(n.text) + "\"";
    case NodeKind::kBool: return n.truth ? "True" : "False";
    case NodeKind::kNone: return "None";
    case NodeKind::kCall: return "a call of " + quote(n.text);
    case NodeKind::kTuple: return "a tuple";
    case NodeKind::kList: return "a list";
    case NodeKind::kIndex: return "a tuple item";
    case NodeKind::kConst: return "a constant";
  }
  return "?";
}

// Whether a number's text is a hex int: 0x or 0X, then hex digits.
bool hex_prefixed(std::string_view text) {
  return text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
}

// The NaN of "nan(<payload>)": exponent all ones, the payload its
// significand bits (nonzero: zero would be inf). False when out of range.
template <typename T>
bool nan_with_payload(std::string_view text, T& out) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  constexpr int kSignificand = std::numeric_limits<T>::digits - 1;  // 52 or 23
  constexpr Bits kExponent = ~Bits{0} >> 1 & ~((Bits{1} << kSignificand) - 1);
  std::string_view inner = text.substr(4, text.size() - 5);  // between "nan(" and ")"
  while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
  while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
  uint64_t payload = 0;
  if (!parse_u64(inner, payload) || payload == 0 || payload >= (uint64_t{1} << kSignificand)) return false;
  Bits bits = kExponent | static_cast<Bits>(payload);
  std::memcpy(&out, &bits, sizeof out);
  return true;
}

// Whether a decimal float text too extreme for from_chars is tiny (it
// underflows to zero) rather than huge.
bool underflows(std::string_view text) {
  int int_digits = 0, frac_zeros = 0;
  bool nonzero = false, after_dot = false;
  size_t i = 0;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    char c = text[i];
    if (c == '.') {
      after_dot = true;
    } else if (!nonzero && c == '0') {
      frac_zeros += after_dot;
    } else {
      nonzero = true;
      int_digits += !after_dot;
    }
  }
  if (!nonzero) return true;
  int64_t exp = 0;
  bool neg = false;
  if (++i < text.size() && (text[i] == '-' || text[i] == '+')) neg = text[i++] == '-';
  for (; i < text.size() && exp < 100000; ++i) exp = exp * 10 + (text[i] - '0');
  int64_t magnitude = (int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1)) + (neg ? -exp : exp);
  return magnitude < 0;
}

// The nearest T to a hex int's value (ties to even, as for decimal text);
// false when it overflows.
template <typename T>
bool hex_int_as_float(std::string_view text, T& out) {
  std::string_view digits = text.substr(2);  // after "0x"
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), out, std::chars_format::hex);
  return r.ec == std::errc() && r.ptr == digits.data() + digits.size();
}

// A float from a number's text (without sign): decimal, a hex int, inf,
// nan or nan(<payload>); false when out of range.
template <typename T>
bool parse_float(std::string_view text, T& out) {
  if (text == "inf") out = std::numeric_limits<T>::infinity();
  else if (text == "nan") out = std::numeric_limits<T>::quiet_NaN();
  else if (text.substr(0, 4) == "nan(") return nan_with_payload(text, out);
  else if (hex_prefixed(text)) return hex_int_as_float(text, out);
  else {
    auto r = std::from_chars(text.data(), text.data() + text.size(), out);
    if (r.ec == std::errc::result_out_of_range && underflows(text)) out = 0;
    else if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
  }
  return true;
}

int64_t int_value(const Source& src, const Node& n) {
  uint64_t mag = 0;
  uint64_t limit = uint64_t{1} << 63;  // |INT64_MIN|
  if (!n.negative) --limit;
  if (!parse_u64(n.text, mag) || mag > limit)
    src.fail(n.off, str("integer ", node_text(n), " is out of range for int64"));
  return n.negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
}

double float_value(const Source& src, const Node& n) {
  double v = 0;
  if (!parse_float(n.text, v)) src.fail(n.off, str("float ", node_text(n), " is out of range"));
  return n.negative ? std::copysign(v, -1.0) : v;  // -nan keeps its sign, as it prints
}

Dim dim_from_node(const Source& src, const Node& n, bool allow_negative) {
  if (n.kind == NodeKind::kInt) {
    int64_t v = int_value(src, n);
    if (v < 0 && !allow_negative) src.fail(n.off, str("dims must be non-negative, got ", v));
    return Dim(v);
  }
  if (n.kind == NodeKind::kString) {
    Dim d = parse_dim(src, n.text, n.off);
    if (d.is_const() && d.value() < 0 && !allow_negative)
      src.fail(n.off, str("dims must be non-negative, got ", d.value()));
    return d;
  }
  src.fail(n.off,
           str("a dim must be an int or a string (symbolic, like \"n\"), got ", node_text(n)));
}

Shape shape_from_node(const Source& src, const Node& n, bool allow_negative) {
  if (n.kind != NodeKind::kTuple && n.kind != NodeKind::kList)
    src.fail(n.off, str("a shape must be a tuple of dims, like (3, \"n\"), got ", node_text(n)));
  Shape shape;
  shape.reserve(n.items.size());
  for (const Node& d : n.items) shape.push_back(dim_from_node(src, d, allow_negative));
  return shape;
}

// ---- symbolic dim strings ----

// The source offset of byte k of the string literal at `off` whose decoded
// text is `text`: exact when the literal is written without escapes (its
// bytes are the text's), else the literal's opening quote.
size_t offset_in_literal(const Source& src, std::string_view text, size_t off, size_t k) {
  std::string_view raw = src.text().substr(off + 1, text.size());
  bool verbatim = raw == text && raw.find('\\') == std::string_view::npos;
  return verbatim ? off + 1 + k : off;
}

// ---- constants ----

template <typename T>
T float_leaf(const Source& src, const ConstLeaf& leaf, DType dtype) {
  if (leaf.kind == NodeKind::kBool) return leaf.truth ? T(1) : T(0);
  T v = 0;
  if (!parse_float(leaf.text, v))
    src.fail(leaf.off, str("value ", leaf.negative ? "-" : "", leaf.text, " is out of range for ",
                           dtype_name(dtype)));
  return leaf.negative ? std::copysign(v, T(-1)) : v;
}

template <typename T>
T int_leaf(const Source& src, const ConstLeaf& leaf, DType dtype) {
  if (leaf.kind == NodeKind::kBool) return leaf.truth ? T(1) : T(0);
  std::string shown = str(leaf.negative ? "-" : "", leaf.text);
  uint64_t max = static_cast<uint64_t>(std::numeric_limits<T>::max());
  uint64_t mag = 0;
  if (leaf.kind == NodeKind::kFloat) {
    double d = 0;
    bool ok = parse_float(leaf.text, d);
    if (!ok || !std::isfinite(d) || d != std::floor(d))
      src.fail(leaf.off, str("value ", shown, " is not an integer (the constant is ",
                             dtype_name(dtype), ")"));
    if (d > 1.8e19) d = 1.8e19;  // out of range below; keeps the cast defined
    mag = static_cast<uint64_t>(d);
  } else if (!parse_u64(leaf.text, mag)) {
    mag = ~uint64_t{0};
  }
  if (mag > max + (leaf.negative ? 1 : 0))
    src.fail(leaf.off, str("value ", shown, " is out of range for ", dtype_name(dtype)));
  return static_cast<T>(leaf.negative ? 0 - mag : mag);
}

// True, False, or the int 0 or 1 (-0 is 0; -1 is refused like 2).
uint8_t bool_leaf(const Source& src, const ConstLeaf& leaf) {
  if (leaf.kind == NodeKind::kBool) return leaf.truth;
  uint64_t v = 0;
  if (leaf.kind != NodeKind::kInt || !parse_u64(leaf.text, v)) v = 2;
  if (v > 1 || (leaf.negative && v != 0))
    src.fail(leaf.off, str("a bool constant holds True or False, got ",
                           leaf.negative ? "-" : "", leaf.text));
  return static_cast<uint8_t>(v);
}

template <typename T, typename F>
void fill(const NDArray& a, const std::vector<ConstLeaf>& leaves, F&& convert) {
  T* data = a.data_as<T>();
  for (size_t i = 0; i < leaves.size(); ++i) data[i] = convert(leaves[i]);
}

}  // namespace

bool parse_u64(std::string_view digits, uint64_t& out) {
  int base = 10;
  if (hex_prefixed(digits)) {
    digits.remove_prefix(2);
    base = 16;
  }
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), out, base);
  return r.ec == std::errc() && r.ptr == digits.data() + digits.size();
}

AttrValue attr_value(const Source& src, const Node& n) {
  switch (n.kind) {
    case NodeKind::kInt: return int_value(src, n);
    case NodeKind::kFloat: return float_value(src, n);
    case NodeKind::kString: return std::string(n.text);
    case NodeKind::kBool: return n.truth;
    case NodeKind::kNone: return NoneValue{};
    case NodeKind::kName:
      if (n.is_float_name()) return float_value(src, n);
      break;
    case NodeKind::kList: {
      bool ints = true;
      for (const Node& item : n.items) ints = ints && item.kind == NodeKind::kInt;
      if (!ints) return shape_from_node(src, n, true);
      std::vector<int64_t> out;
      out.reserve(n.items.size());
      for (const Node& item : n.items) out.push_back(int_value(src, item));
      return out;
    }
    case NodeKind::kTuple: return shape_from_node(src, n, true);
    default: break;
  }
  src.fail(n.off, str("expected a literal (a number, string, True/False/None, or a list or tuple "
                      "of ints), got ", node_text(n)));
}

Dim parse_dim(const Source& src, std::string_view text, size_t off) {
  try {
    return Dim::parse(text);
  } catch (const DimSyntaxError& e) {
    src.fail(offset_in_literal(src, text, off, e.offset()), e.what());
  }
}

DType dtype_from_node(const Source& src, const Node& n) {
  if (n.kind != NodeKind::kString)
    src.fail(n.off, str("expected a dtype string like \"float32\", got ", node_text(n)));
  if (auto t = dtype_from_name(std::string(n.text))) return *t;
  src.fail(n.off, str("unknown dtype \"", escape(n.text),
                      "\" (expected float32, float64, int32, int64 or bool)"));
}

Type type_from_node(const Source& src, const Node& n) {
  bool known = n.kind == NodeKind::kCall && (n.text == "Tensor" || n.text == "Tuple");
  if (!known)
    src.fail(n.off, str("expected a type, like Tensor((3,), \"float32\") or Tuple(...), got ",
                        node_text(n)));
  if (n.text == "Tuple") {
    std::vector<Type> fields;
    fields.reserve(n.items.size());
    for (const Node& item : n.items) {
      if (!item.key.empty()) src.fail(item.key_off, "Tuple takes no keyword arguments");
      fields.push_back(type_from_node(src, item));
    }
    try {
      return TypeNode::tuple(std::move(fields));
    } catch (const TypeInferenceError& e) {
      src.fail<TypeInferenceError>(n.off, e.what());
    }
  }
  const Node* parts[2] = {nullptr, nullptr};  // shape, dtype
  size_t positional = 0;
  for (const Node& item : n.items) {
    int slot = item.key.empty() ? static_cast<int>(positional++)
               : item.key == "shape" ? 0 : item.key == "dtype" ? 1 : -1;
    size_t where = item.key.empty() ? item.off : item.key_off;
    if (slot < 0)
      src.fail(where, str("Tensor has no argument '", item.key, "' (it takes shape, dtype)"));
    if (slot > 1)
      src.fail(where, "Tensor takes a shape and a dtype, like Tensor((3, 4), \"float32\")");
    if (parts[slot])
      src.fail(where, str("Tensor's ", slot == 0 ? "shape" : "dtype", " given twice"));
    parts[slot] = &item;
  }
  if (!parts[0] || !parts[1])
    src.fail(n.off, "Tensor needs a shape and a dtype, like Tensor((3, 4), \"float32\")");
  Shape shape = shape_from_node(src, *parts[0], false);
  DType dtype = dtype_from_node(src, *parts[1]);
  try {
    return TypeNode::tensor(std::move(shape), dtype);
  } catch (const SizeOverflowError& e) {
    src.fail<TypeInferenceError>(parts[0]->off, e.what());
  }
}

Expr make_constant(const Source& src, const std::vector<int64_t>& shape,
                   const std::vector<ConstLeaf>& leaves, DType dtype) {
  NDArray a(shape, dtype);
  auto as_float = [&](const ConstLeaf& l) { return float_leaf<float>(src, l, dtype); };
  auto as_double = [&](const ConstLeaf& l) { return float_leaf<double>(src, l, dtype); };
  auto as_int32 = [&](const ConstLeaf& l) { return int_leaf<int32_t>(src, l, dtype); };
  auto as_int64 = [&](const ConstLeaf& l) { return int_leaf<int64_t>(src, l, dtype); };
  auto as_bool = [&](const ConstLeaf& l) { return bool_leaf(src, l); };
  switch (dtype) {
    case DType::kFloat32: fill<float>(a, leaves, as_float); break;
    case DType::kFloat64: fill<double>(a, leaves, as_double); break;
    case DType::kInt32: fill<int32_t>(a, leaves, as_int32); break;
    case DType::kInt64: fill<int64_t>(a, leaves, as_int64); break;
    case DType::kBool: fill<uint8_t>(a, leaves, as_bool); break;
  }
  return std::make_shared<ConstantNode>(std::move(a));
}

}  // namespace aj::text
