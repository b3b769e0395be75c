// Construction of expr nodes: types of constants, tuples and tuple items, and
// make_call, which resolves an op's attrs and infers the call's type.
#include "adjoint/ir/expr.h"

#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

Type constant_type(const NDArray& a) {
  Shape shape(a.shape().begin(), a.shape().end());
  return TypeNode::tensor(std::move(shape), a.dtype());
}

Type tuple_type(const std::vector<Expr>& fields) {
  std::vector<Type> types;
  types.reserve(fields.size());
  for (const auto& f : fields) types.push_back(f->type());
  try {
    return TypeNode::tuple(std::move(types));
  } catch (const TypeInferenceError& e) {
    throw TypeInferenceError(str("Tuple: ", e.what()));
  }
}

Type item_type(const Expr& tuple, int64_t index) {
  const Type& t = tuple->type();
  if (!t->is_tuple())
    throw TypeInferenceError(str("tuple item [", index, "] of a non-tuple of type ", t->to_string()));
  int64_t n = static_cast<int64_t>(t->fields().size());
  if (index < 0 || index >= n)
    throw TypeInferenceError(str("tuple index ", index, " out of range for a tuple of ", n, " fields"));
  return t->fields()[index];
}

int deepest(const std::vector<Expr>& operands) {
  int d = 0;
  for (const auto& e : operands)
    if (e && e->depth() > d) d = e->depth();
  return d;
}

// The depth of an expr whose deepest operand has depth `deepest`; `what`
// names the new expr when that is too deep.
template <typename What>
int nested_depth(int deepest, What what) {
  if (deepest >= kMaxExprDepth)
    throw TypeInferenceError(str(what(), ": exprs nest deeper than ", kMaxExprDepth,
                                 " levels; bind the inner values to vars instead"));
  return deepest + 1;
}

}  // namespace

ConstantNode::ConstantNode(NDArray data)
    : ExprNode(ExprKind::kConstant, constant_type(data)), data_(std::move(data)) {}

CallNode::CallNode(const OpDef* op, std::vector<Expr> args, Attrs attrs, Type type)
    : ExprNode(ExprKind::kCall, std::move(type),
               nested_depth(deepest(args), [op] { return str("call to '", op->name, "'"); })),
      op_(op), args_(std::move(args)), attrs_(std::move(attrs)) {}

TupleNode::TupleNode(std::vector<Expr> fields)
    : ExprNode(ExprKind::kTuple, tuple_type(fields), nested_depth(deepest(fields), [] { return "Tuple"; })),
      fields_(std::move(fields)) {}

TupleGetItemNode::TupleGetItemNode(Expr tuple, int64_t index)
    : ExprNode(ExprKind::kTupleGetItem, item_type(tuple, index),
               nested_depth(tuple->depth(), [] { return "TupleGetItem"; })),
      tuple_(std::move(tuple)), index_(static_cast<int>(index)) {}

bool is_leaf(const Expr& e) {
  switch (e->kind()) {
    case ExprKind::kVar:
    case ExprKind::kConstant:
      return true;
    case ExprKind::kTuple:
      for (const auto& f : static_cast<const TupleNode&>(*e).fields())
        if (!is_leaf(f)) return false;
      return true;
    default:
      return false;
  }
}

Call make_call(const OpDef& op, std::vector<Expr> args, Attrs attrs) {
  if (args.size() != op.arg_names.size())
    throw TypeInferenceError(str("op '", op.name, "' takes ", op.arg_names.size(),
                                 " argument(s), got ", args.size()));
  if (attrs.size() != op.attrs.size())
    throw TypeInferenceError(str("op '", op.name, "' expects ", op.attrs.size(),
                                 " attr value(s), got ", attrs.size()));
  for (size_t i = 0; i < attrs.size(); ++i) attrs[i] = coerce_attr(op, op.attrs[i], attrs[i]);
  TypeContext ctx{op, args, attrs};
  Type type;
  try {
    type = op.infer_type(ctx);
  } catch (const SizeOverflowError& e) {
    ctx.fail(e.what());
  } catch (const TypeInferenceError&) {
    throw;
  } catch (const Error& e) {  // dim arithmetic and other checks that do not know the op
    ctx.fail(e.what());
  }
  return std::make_shared<CallNode>(&op, std::move(args), std::move(attrs), std::move(type));
}

}  // namespace aj
