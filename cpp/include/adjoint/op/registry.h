// The op registry: a map from op to the op's definition, holding per op its
// argument names, attr schema with defaults, type rule, and the slots that
// later layers fill (VJP rule, FLOP count, CPU kernel). Each op family
// (cpp/src/op/<family>.cc) defines the ops op_list.def lists under it, by
// handle (reg.define(ops::matmul)), in one function; adding an op touches
// the list and that family's file only.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "adjoint/ir/expr.h"
#include "adjoint/op/ops.h"
#include "adjoint/support/error.h"

namespace aj {

// How an attr's value is checked and normalized when a call is made.
enum class AttrKind {
  kInt,         // int
  kFloat,       // float (ints accepted)
  kBool,        // bool
  kString,      // str
  kDType,       // "float32", ...
  kOptDType,    // None or a dtype
  kIntList,     // [int, ...] (a single int becomes [int])
  kOptIntList,  // None or [int, ...] (a single int becomes [int])
  kShape,       // (dim, ...): ints or symbolic dims
  kIntOrIntList,  // an int (kept as int) or a list of ints
  kReshapeShape,  // a kShape that may hold one -1 (a dim to infer)
};
const char* attr_kind_name(AttrKind kind);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // none: required (printed positionally)
};

// An attr of a call by name; throws aj::Error when the op has no such attr.
const AttrValue& lookup_attr(const OpDef& op, const Attrs& attrs, const std::string& name);

// Typed reads of a call's resolved attrs, by name; shared by type rules
// (TypeContext) and kernels (KernelContext). Self provides op() and attrs().
template <class Self>
struct AttrReader {
  const AttrValue& attr(const std::string& name) const {
    const Self& s = static_cast<const Self&>(*this);
    return lookup_attr(s.op_def(), s.attr_values(), name);
  }
  int64_t attr_int(const std::string& name) const { return std::get<int64_t>(attr(name)); }
  double attr_float(const std::string& name) const { return std::get<double>(attr(name)); }
  bool attr_bool(const std::string& name) const { return std::get<bool>(attr(name)); }
  const std::string& attr_string(const std::string& name) const { return std::get<std::string>(attr(name)); }
  DType attr_dtype(const std::string& name) const { return std::get<DType>(attr(name)); }
  std::optional<DType> attr_opt_dtype(const std::string& name) const {
    const AttrValue& v = attr(name);
    if (std::holds_alternative<NoneValue>(v)) return std::nullopt;
    return std::get<DType>(v);
  }
  std::optional<std::vector<int64_t>> attr_opt_ints(const std::string& name) const {
    const AttrValue& v = attr(name);
    if (std::holds_alternative<NoneValue>(v)) return std::nullopt;
    return std::get<std::vector<int64_t>>(v);
  }
  const std::vector<int64_t>& attr_ints(const std::string& name) const {
    return std::get<std::vector<int64_t>>(attr(name));
  }
  const Shape& attr_shape(const std::string& name) const { return std::get<Shape>(attr(name)); }
};

// What a type rule sees. fail() throws TypeInferenceError prefixed with the op name.
struct TypeContext : AttrReader<TypeContext> {
  TypeContext(const OpDef& op_, const std::vector<Expr>& args_, const Attrs& attrs_)
      : op(op_), args(args_), attrs(attrs_) {}
  const OpDef& op;
  const std::vector<Expr>& args;
  const Attrs& attrs;

  const OpDef& op_def() const { return op; }
  const Attrs& attr_values() const { return attrs; }
  const Type& arg_type(size_t i) const { return args[i]->type(); }
  // The i-th arg's type, which must be a tensor (else fail naming the arg).
  const TypeNode& tensor(size_t i) const;

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw TypeInferenceError(str("op '", op_name(), "': ", parts...));
  }
  const std::string& op_name() const;
};

using TypeRule = Type (*)(const TypeContext& ctx);

// FLOP count of one call, as a dim (a polynomial when shapes are symbolic).
using FlopRule = Dim (*)(const CallNode& call);

// Filled by the autodiff layer (issue: Gradient) and the runtime (executor).
struct VJPContext;
using VJPRule = std::function<std::vector<Expr>(VJPContext& ctx)>;
struct KernelContext;
using Kernel = std::function<void(KernelContext& ctx)>;
// For a view op whose output may be a block of its input's bytes: given the
// input's and the output's shapes in this run, the element offset of that
// block, or nullopt when the output is not one contiguous block of the input
// (then the kernel runs).
using ViewOffset = std::optional<int64_t> (*)(const CallNode& call, const std::vector<int64_t>& in_shape,
                                              const std::vector<int64_t>& out_shape);
// Fused elementwise execution (runtime/fusion.cc): an elementwise op's work
// on one block of elements (runtime/block_kernel.h), and the rule that picks
// it for a call's dtypes (null when the op has none for them).
struct BlockArgs;
using BlockFn = void (*)(const BlockArgs& args);
using BlockRule = BlockFn (*)(const CallNode& call);

struct OpDef {
  std::string name;
  OpId id{};  // its line in op_list.def
  std::string family;  // its family in op_list.def
  std::vector<std::string> arg_names;
  std::vector<AttrSpec> attrs;
  TypeRule infer_type = nullptr;
  FlopRule flops = nullptr;
  VJPRule vjp;
  Kernel kernel;
  bool differentiable = true;  // false: contributes no gradient (comparisons, ints)
  // The kernel may write its output over an input of the same type (reads
  // element i before writing element i): elementwise ops.
  bool inplace_ok = false;
  // The output is the input's bytes under another shape (reshape,
  // expand_dims, squeeze): when the input dies here, the output takes over
  // its buffer and the kernel does not run.
  bool is_view = false;
  // A view op's offset into its input per run (strided_slice); null: the
  // output is always the whole input (offset 0).
  ViewOffset view_offset = nullptr;
  // The kernel can throw in a run whose inputs passed the checks: it checks
  // the data (indices, labels, slice bounds, empty max/min) or allocates
  // scratch in proportion to its input. No donated input is written before
  // such an op has run (runtime/executor.h).
  bool may_fail = false;
  // The block function the executor's fusion runs in place of the kernel,
  // computing each element with the kernel's own functor (same bits); null:
  // the op is never fused.
  BlockRule block = nullptr;
  // The op's reference text (Markdown): semantics with the NumPy/PyTorch
  // equivalent, then "Type:", "VJP:", "FLOPs:" and "Dtypes:" paragraphs. It
  // is the docstring of aj.op.<name> and its entry in docs/ops.md.
  std::string doc;

  int attr_index(const std::string& attr_name) const;  // -1 when absent

  // Fluent definition helpers used by the family files.
  OpDef& set_args(std::vector<std::string> names) { arg_names = std::move(names); return *this; }
  OpDef& add_attr(std::string n, AttrKind k) { attrs.push_back({std::move(n), k, std::nullopt}); return *this; }
  OpDef& add_attr(std::string n, AttrKind k, AttrValue def) { attrs.push_back({std::move(n), k, std::move(def)}); return *this; }
  OpDef& set_type_rule(TypeRule r) { infer_type = r; return *this; }
  OpDef& set_flops(FlopRule r) { flops = r; return *this; }
  OpDef& set_doc(std::string text) { doc = std::move(text); return *this; }
  OpDef& set_differentiable(bool d) { differentiable = d; return *this; }
  OpDef& set_kernel(Kernel k) { kernel = std::move(k); return *this; }
  OpDef& set_inplace_ok(bool ok) { inplace_ok = ok; return *this; }
  OpDef& set_view(bool view) { is_view = view; return *this; }
  OpDef& set_may_fail() { may_fail = true; return *this; }
  OpDef& set_view_offset(ViewOffset f) { is_view = true; view_offset = f; return *this; }
  OpDef& set_vjp(VJPRule r) { vjp = std::move(r); return *this; }
  OpDef& set_block(BlockRule r) { block = r; return *this; }
};

class OpRegistry {
 public:
  static OpRegistry& global();
  // Defines op, with the family op_list.def gives it; throws when a family
  // other than that one defines it, or when it is already defined.
  OpDef& define(OpHandle op);
  const OpDef* find(const std::string& name) const;  // nullptr when unknown
  const OpDef& get(const std::string& name) const;   // throws aj::Error when unknown
  // For the message naming an unknown op: " (did you mean 'matmul'?)" when
  // one op's name is near (a few edits away, or starting with the name),
  // a word on prefixes when the name after one (TVM's "relax.") is an op's,
  // else "".
  std::string unknown_op_hint(const std::string& name) const;
  const OpDef& get(OpId id) const { return *by_id_[static_cast<size_t>(id)]; }
  const std::vector<const OpDef*>& all() const { return order_; }

 private:
  OpRegistry();
  std::unordered_map<std::string, std::unique_ptr<OpDef>> ops_;
  std::vector<const OpDef*> order_;
  std::vector<const OpDef*> by_id_;  // indexed by OpId
  const char* defining_family_ = nullptr;  // the family whose ops are being defined
};

// Checks `raw` against the spec's kind and returns it normalized (an int to a
// list for list kinds, a str to a DType, ints to floats). Throws
// TypeInferenceError naming the op and the attr.
AttrValue coerce_attr(const OpDef& op, const AttrSpec& spec, const AttrValue& raw);

// Fills an op's attrs from positional and keyword values, in schema order,
// applying defaults. Throws TypeInferenceError on an unknown, missing,
// duplicated or ill-kinded attr.
Attrs resolve_attrs(const OpDef& op, const std::vector<AttrValue>& positional,
                    const std::vector<std::pair<std::string, AttrValue>>& keyword);

}  // namespace aj
