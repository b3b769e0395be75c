// ConvertDType: one float dtype as another, throughout a function.
//   1. A param of a type holding `from` becomes a new var of the converted
//      type.
//   2. Each binding's value is rebuilt bottom-up: vars as replaced, constants
//      of dtype `from` converted element by element, calls with a dtype attr
//      naming `from` given `to` instead, and any call, tuple or tuple item
//      whose parts changed made again (so its type is inferred again). A
//      binding whose type changes gets a new var; its uses follow.
//   3. Nothing changed: the same function.
#include "adjoint/transform/convert_dtype.h"

#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/op/registry.h"
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

NDArray convert_array(const NDArray& in, DType to) {
  NDArray out = NDArray::empty(in.shape(), to);
  if (to == DType::kFloat64) convert_elements<double, float>(in, out);
  else convert_elements<float, double>(in, out);
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
  Converter(const FunctionNode& fn, DType to, DType from) : fn_(fn), to_(to), from_(from), replaced_(fn) {}

  Function run() {
    std::vector<Var> params;
    params.reserve(fn_.params().size());
    for (const Var& p : fn_.params())
      params.push_back(convert_var(p, convert_type(p->type(), to_, from_), "params converted"));
    std::vector<Binding> bindings;
    bindings.reserve(fn_.bindings().size());
    bool changed = replaced_any_;
    for (const Binding& b : fn_.bindings()) {
      Expr value = convert(b.value);
      changed = changed || value != b.value;
      bindings.push_back({convert_var(b.var, value->type(), "bindings retyped"), std::move(value)});
    }
    Expr ret = convert(fn_.ret());
    if (!changed && ret == fn_.ret()) return nullptr;
    return std::make_shared<FunctionNode>(std::move(params), std::move(bindings), std::move(ret), fn_.attrs());
  }

 private:
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

  Expr convert(const Expr& e) const {
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

  Expr convert_call(const CallNode& c, const Expr& e) const {
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
    return changed ? make_call(c.op(), std::move(args), std::move(attrs)) : e;
  }

  // xs converted, into `out`; whether any changed.
  bool convert_all(const std::vector<Expr>& xs, std::vector<Expr>& out) const {
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
