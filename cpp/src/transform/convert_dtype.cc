// ConvertDType: one float dtype as another, throughout a function.
//   1. A param of a type holding `from` becomes a new var of the converted
//      type.
//   2. Each binding's value is rebuilt bottom-up: vars as replaced, constants
//      of dtype `from` converted element by element, calls with a dtype attr
//      naming `from` given `to` instead, and any call, tuple or tuple item
//      whose parts changed made again (so its type is inferred again). A
//      binding whose type changes gets a new var; its uses follow.
//   3. A call that still gives `from` (divide of ints or bools, the one op
//      whose `from` result has no `from` operand and no dtype attr) takes its
//      int and bool operands as `to`: a constant converted, a var through
//      astype(var, to), bound once before its first such use. A
//      TypeInferenceError from an op's rule names the pass and the binding.
//   4. Nothing changed: the same function.
#include "adjoint/transform/convert_dtype.h"

#include "adjoint/ir/fresh_names.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/op/registry.h"
#include "adjoint/runtime/kernel_util.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/pass_stats.h"

namespace aj {
namespace {

template <typename To, typename From>
void convert_elements(const NDArray& in, const NDArray& out) {
  const From* src = in.data_as<From>();
  To* dst = out.data_as<To>();
  for (int64_t i = 0, n = in.numel(); i < n; ++i) dst[i] = static_cast<To>(src[i]);
}

// in's elements (of any dtype; bools as 0 and 1) as the float dtype `to`.
NDArray convert_array(const NDArray& in, DType to) {
  NDArray out = NDArray::empty(in.shape(), to);
  dispatch_dtype(in.dtype(), [&](auto from_tag) {
    dispatch_float(to, [&](auto to_tag) {
      convert_elements<typename decltype(to_tag)::type, typename decltype(from_tag)::type>(in, out);
    });
  });
  return out;
}

Type convert_type(const Type& t, DType to, DType from) {
  if (t->is_tensor()) return t->dtype() == from ? TypeNode::tensor(t->shape(), to) : t;
  std::vector<Type> fields;
  fields.reserve(t->fields().size());
  bool changed = false;
  for (const Type& f : t->fields()) {
    fields.push_back(convert_type(f, to, from));
    changed = changed || fields.back() != f;
  }
  return changed ? TypeNode::tuple(std::move(fields)) : t;
}

bool is_dtype_attr(const AttrSpec& spec) {
  return spec.kind == AttrKind::kDType || spec.kind == AttrKind::kOptDType;
}

class Converter {
 public:
  Converter(const FunctionNode& fn, DType to, DType from)
      : fn_(fn), to_(to), from_(from), replaced_(fn), cast_(fn), names_(fn) {}

  Function run() {
    std::vector<Var> params;
    params.reserve(fn_.params().size());
    for (const Var& p : fn_.params())
      params.push_back(convert_var(p, convert_type(p->type(), to_, from_), "params converted"));
    bindings_.reserve(fn_.bindings().size());
    bool changed = replaced_any_;
    for (const Binding& b : fn_.bindings()) {
      binding_ = b.var.get();
      Expr value = convert_binding(b);
      changed = changed || value != b.value;
      bindings_.push_back({convert_var(b.var, value->type(), "bindings retyped"), std::move(value)});
    }
    Expr ret = convert(fn_.ret());
    if (!changed && ret == fn_.ret()) return nullptr;
    return std::make_shared<FunctionNode>(std::move(params), std::move(bindings_), std::move(ret), fn_.attrs());
  }

 private:
  // b's value converted; an op's TypeInferenceError is reported with the
  // pass and the binding.
  Expr convert_binding(const Binding& b) {
    try {
      return convert(b.value);
    } catch (const TypeInferenceError& e) {
      throw TypeInferenceError(str(where(), e.what()));
    }
  }

  // The pass and the binding being converted, for messages.
  std::string where() const {
    return str("ConvertDType(dtype='", dtype_name(to_), "', from_dtype='", dtype_name(from_), "') at binding '",
               binding_->name_hint(), "': ");
  }

  // v, or a new var of the same name when its type changes (recorded so its
  // uses follow, and counted as `what` for Pass.explain).
  Var convert_var(const Var& v, const Type& type, const char* what) {
    if (type_equal(type, v->type())) return v;
    Var out = std::make_shared<VarNode>(v->name_hint(), type);
    count_pass_stat(what);
    replaced_.set(v.get(), out);
    replaced_any_ = true;
    return out;
  }

  Expr convert(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kVar: {
        const Expr* r = replaced_.find(static_cast<const VarNode*>(e.get()));
        return r && *r ? *r : e;
      }
      case ExprKind::kConstant: {
        const NDArray& data = static_cast<const ConstantNode&>(*e).data();
        if (data.dtype() != from_) return e;
        count_pass_stat("constants converted");
        return std::make_shared<ConstantNode>(convert_array(data, to_));
      }
      case ExprKind::kTuple: {
        std::vector<Expr> fields;
        return convert_all(static_cast<const TupleNode&>(*e).fields(), fields)
                   ? std::make_shared<TupleNode>(std::move(fields)) : e;
      }
      case ExprKind::kTupleGetItem: {
        const auto& g = static_cast<const TupleGetItemNode&>(*e);
        Expr t = convert(g.tuple());
        return t == g.tuple() ? e : std::make_shared<TupleGetItemNode>(t, g.index());
      }
      case ExprKind::kCall:
        return convert_call(static_cast<const CallNode&>(*e), e);
    }
    return e;
  }

  Expr convert_call(const CallNode& c, const Expr& e) {
    std::vector<Expr> args;
    bool changed = convert_all(c.args(), args);
    Attrs attrs = c.attrs();
    for (size_t i = 0; i < attrs.size(); ++i) {
      const DType* d = std::get_if<DType>(&attrs[i]);
      if (d && *d == from_ && is_dtype_attr(c.op().attrs[i])) {
        attrs[i] = to_;
        changed = true;
        count_pass_stat("dtype attrs converted");
      }
    }
    Expr out = changed ? make_call(c.op(), args, attrs) : e;
    return gives_from(*out) ? with_int_operands_as_to(c.op(), std::move(args), std::move(attrs)) : out;
  }

  // Whether a call's result still holds `from`.
  bool gives_from(const ExprNode& call) const { return convert_type(call.type(), to_, from_) != call.type(); }

  // op(args) with its int and bool tensor operands as `to` (divide of ints
  // then divides floats). An op giving `from` from `to` operands is a
  // TransformError (no op does).
  Expr with_int_operands_as_to(const OpDef& op, std::vector<Expr> args, Attrs attrs) {
    for (Expr& a : args)
      if (a->type()->is_tensor() && !is_float(a->type()->dtype())) a = as_to(a);
    Expr out = make_call(op, std::move(args), std::move(attrs));
    if (gives_from(*out))
      throw TransformError(str(where(), "op '", op.name, "' gives ", out->type()->to_string(),
                               " from operands of no ", dtype_name(from_), " value"));
    return out;
  }

  // An int or bool operand as `to`: a constant converted, a var cast by a
  // binding made at its first such use.
  Expr as_to(const Expr& a) {
    count_pass_stat("int and bool operands cast");
    if (a->kind() == ExprKind::kConstant)
      return std::make_shared<ConstantNode>(convert_array(static_cast<const ConstantNode&>(*a).data(), to_));
    const auto* v = a->kind() == ExprKind::kVar ? static_cast<const VarNode*>(a.get()) : nullptr;
    if (const Var* cast = v ? cast_.find(v) : nullptr; cast && *cast) return *cast;
    Expr value = ops::astype({a}, {{"dtype", to_}});
    Var cast = std::make_shared<VarNode>(names_.next(), value->type());
    bindings_.push_back({cast, std::move(value)});
    if (v) cast_.set(v, cast);
    return cast;
  }

  // xs converted, into `out`; whether any changed.
  bool convert_all(const std::vector<Expr>& xs, std::vector<Expr>& out) {
    out.reserve(xs.size());
    bool changed = false;
    for (const Expr& x : xs) {
      out.push_back(convert(x));
      changed = changed || out.back() != x;
    }
    return changed;
  }

  const FunctionNode& fn_;
  DType to_, from_;
  VarTable<Expr> replaced_;
  bool replaced_any_ = false;
  const VarNode* binding_ = nullptr;  // the binding being converted
  std::vector<Binding> bindings_;     // the function's, converted so far
  VarTable<Var> cast_;                // int and bool vars cast to `to`, by var
  FreshNames names_;                  // for those casts
};

void check_dtypes(DType to, DType from) {
  if (!is_float(to) || !is_float(from))
    throw TransformError(str("ConvertDType converts between float32 and float64, not from ", dtype_name(from),
                             " to ", dtype_name(to)));
  if (to == from) throw TransformError(str("ConvertDType: dtype and from_dtype are both ", dtype_name(to)));
}

}  // namespace

Function convert_dtype(const Function& fn, DType to, DType from) {
  check_dtypes(to, from);
  Function out = Converter(*fn, to, from).run();
  return out ? out : fn;
}

Module convert_dtype(const Module& mod, DType to, DType from) {
  check_dtypes(to, from);
  return map_functions(mod, [to, from](const Function& fn) { return convert_dtype(fn, to, from); });
}

}  // namespace aj
