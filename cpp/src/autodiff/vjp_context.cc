// The helpers VJP rules build adjoint code with (autodiff/vjp.h).
#include "adjoint/autodiff/vjp.h"

#include "adjoint/ir/ndarray.h"

namespace aj {

Expr VJPContext::make(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs) const {
  return op(std::move(args), attrs);
}

Var VJPContext::emit(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs) {
  return bb.emit(make(op, std::move(args), attrs));
}

Expr VJPContext::collapse_to(const Expr& g, const Shape& shape) const {
  if (g->type()->shape() == shape) return g;
  return make(ops::collapse_sum_to, {g}, {{"shape", shape}});
}

Expr VJPContext::scalar(double value, DType dtype) {
  NDArray a({}, dtype);
  if (dtype == DType::kFloat32) *a.data_as<float>() = static_cast<float>(value);
  else *a.data_as<double>() = value;
  return std::make_shared<ConstantNode>(std::move(a));
}

}  // namespace aj
