// Choosing between algebraically equal forms of one value by their FLOPs
// (what ReassociateMatmul does). A form is an expr DAG: its calls are the
// work the form does, its leaves (vars, constants) values the function
// already has; a call it reaches twice (the x of W@x + B@(A@x) when x is
// itself a call) is one value, computed and counted once. A form's cost is what estimate_flops(compile_time_free=True)
// would count for its calls: each call's FLOP rule, or nothing when every
// leaf under it is computable at compile time and the weights fix its shape
// (analysis/compile_time.h).
// With symbolic dims, one form is chosen over another only when it is
// provably no costlier for every dim value within the bounds and not
// provably equal (analysis/dim_bounds.h): otherwise the input form stays.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/analysis/dim_bounds.h"
#include "adjoint/ir/dim.h"

namespace aj {

class FormCost {
 public:
  // The compile-time-computable vars of the function `index` describes.
  FormCost(const DataflowIndex& index, const DimBounds& bounds);

  // Whether `form` is computable at compile time: every leaf is, and so is
  // the shape of every call (its symbols are ones the weights bind alone).
  bool computable(const Expr& form) const;
  // Whether every symbol of `type` is one the weights bind alone.
  bool fixed_by_weights(const TypeNode& type) const;
  // The FLOPs of the form's calls that are not computable at compile time,
  // each distinct call once. SizeOverflowError when a count overflows.
  Dim cost(const Expr& form) const;
  // The position of the alternative to take instead of `input` (given by
  // their costs): one whose cost is no larger than the input's for every dim
  // value within the bounds and not the same polynomial, and no costlier
  // than each other such one (the first when none is), or nullopt.
  std::optional<size_t> choose(const Dim& input, const std::vector<Dim>& alternatives) const;
  const DimBounds& bounds() const { return bounds_; }

 private:
  Dim cost(const Expr& form, std::unordered_set<const ExprNode*>& counted) const;

  std::unordered_set<const VarNode*> computable_vars_;
  std::set<std::string> weight_symbols_;
  const DimBounds& bounds_;
};

// Whether two forms are the same tree of calls (same ops and attrs) over
// the same leaves.
bool same_form(const Expr& a, const Expr& b);

// The form of `root` (a call) with each var of `inner` replaced by the form
// of the call it is bound to: the work a rewrite of root would replace.
Expr expand_form(const Expr& root, const std::unordered_set<const VarNode*>& inner, const DataflowIndex& index);

}  // namespace aj
