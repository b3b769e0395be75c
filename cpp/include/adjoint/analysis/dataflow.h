// The dataflow index of one function: for each var its definition (param,
// call, tuple, tuple item, alias of another var, constant) and its users
// (the bindings whose values use it, and the return), which bindings the
// return needs (liveness), and forward dependence. Passes, the executor's
// planning, the verifier and the pattern matcher read def/use here instead
// of walking the function themselves; for_each_operand is the one walk over
// an expr's operands. Building the index is linear in the function's size.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/ir/var_map.h"

namespace aj {

// f(operand) for each direct operand of e: a call's args, a tuple's fields,
// a tuple item's tuple. Vars and constants have none.
template <class F>
void for_each_operand(const ExprNode& e, F&& f) {
  switch (e.kind()) {
    case ExprKind::kCall:
      for (const Expr& a : static_cast<const CallNode&>(e).args()) f(a);
      return;
    case ExprKind::kTuple:
      for (const Expr& a : static_cast<const TupleNode&>(e).fields()) f(a);
      return;
    case ExprKind::kTupleGetItem:
      f(static_cast<const TupleGetItemNode&>(e).tuple());
      return;
    case ExprKind::kVar:
    case ExprKind::kConstant:
      return;
  }
}

// f(var) for each var that e uses, looking through nested tuples and calls,
// in order, repeats included (e itself when it is a var).
template <class F>
void for_each_var_use(const Expr& e, F&& f) {
  if (e->kind() == ExprKind::kVar) {
    f(static_cast<const VarNode*>(e.get()));
    return;
  }
  for_each_operand(*e, [&f](const Expr& a) { for_each_var_use(a, f); });
}

enum class DefKind : uint8_t { kUndefined, kParam, kCall, kTuple, kTupleGetItem, kAlias, kConstant };

class DataflowIndex {
 public:
  explicit DataflowIndex(const FunctionNode& fn);

  const FunctionNode& function() const { return fn_; }

  // How v is defined here; kUndefined for a var the function does not
  // define (a free var, or one of another function).
  DefKind def_kind(const VarNode* v) const;
  bool is_param(const VarNode* v) const { return def_kind(v) == DefKind::kParam; }
  // v's position among the params, or -1.
  int64_t param_index(const VarNode* v) const;
  // The position of the binding that defines v, or -1 (params, free vars).
  int64_t binding_index(const VarNode* v) const;
  // The value v is bound to, or nullptr (params, free vars).
  const Expr* value(const VarNode* v) const;
  // The call v is bound to, or nullptr.
  const CallNode* call(const VarNode* v) const;
  // The call e is bound to when e is a var bound to a call, else nullptr.
  const CallNode* call(const Expr& e) const;

  // The bindings whose values use v, by position, ascending, each once.
  std::vector<int64_t> users(const VarNode* v) const;
  // Whether the returned expr uses v.
  bool used_by_return(const VarNode* v) const;
  // How many bindings use v, plus one when the return does.
  size_t num_users(const VarNode* v) const;

  // Which bindings the returned value depends on (1) or not (0), by position.
  const std::vector<uint8_t>& live() const { return live_; }

  // Per binding: 1 when its value depends, directly or through earlier
  // bindings, on a param or binding var for which `seed` is true.
  std::vector<uint8_t> depends_on(const std::function<bool(const VarNode*)>& seed) const;
  // Per binding: 1 when every var its value uses is a var for which `allowed`
  // is true or a binding marked 1 itself; a value that uses no var (only
  // constants) is 1. With `allowed` the weights, this is what is computable
  // at compile time.
  std::vector<uint8_t> depends_only_on(const std::function<bool(const VarNode*)>& allowed) const;

 private:
  // Index of v in the function (params first, then bindings), or -1.
  int64_t slot(const VarNode* v) const;

  const FunctionNode& fn_;
  size_t num_params_;
  VarIndexMap index_;
  std::vector<DefKind> kind_;        // by slot
  std::vector<int64_t> user_start_;  // by slot, CSR offsets into users_ (size slots + 1)
  std::vector<int64_t> users_;       // binding positions, grouped by the var used
  std::vector<uint8_t> returned_;    // by slot
  std::vector<uint8_t> live_;        // by binding
};

}  // namespace aj
