// What a VJP rule sees, and the helpers rules build adjoint code with.
// A rule receives the forward call (its args are vars or constants of the
// adjoint function being built) and the adjoint of the call's result, and
// returns one adjoint expr per argument: nullptr where the argument gets no
// gradient; for a tuple argument (concat's), a Tuple of per-field adjoints.
// Returned exprs may be trees of calls built with make(): the Gradient pass
// binds the root as `<arg>_adjoint` and nested calls as intermediates. A
// value used twice must be emit()ted once and its var reused.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/builder.h"
#include "adjoint/op/registry.h"

namespace aj {

struct VJPContext : AttrReader<VJPContext> {
  FunctionBuilder& bb;
  const CallNode& call;
  Var result;    // the forward result
  Expr grad;     // adjoint of the result: a var, or a Tuple of vars for tuple results

  VJPContext(FunctionBuilder& b, const CallNode& c, Var r, Expr g)
      : bb(b), call(c), result(std::move(r)), grad(std::move(g)) {}

  const OpDef& op_def() const { return call.op(); }
  const Attrs& attr_values() const { return call.attrs(); }
  const Expr& arg(size_t i) const { return call.args()[i]; }
  const TypeNode& arg_type(size_t i) const { return *call.args()[i]->type(); }

  // op(args, attrs) as an unbound call (defaults filled, type inferred).
  Expr make(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs = {}) const;
  // Binds op(args, attrs) now and returns its var (for values used twice).
  Var emit(OpHandle op, std::vector<Expr> args, const KwAttrs& attrs = {});
  // g summed down to `shape` when broadcasting made it larger; g itself otherwise.
  Expr collapse_to(const Expr& g, const Shape& shape) const;
  // A scalar constant of `dtype`.
  Expr scalar(double value, DType dtype);
};

}  // namespace aj
