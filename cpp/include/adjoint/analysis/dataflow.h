// The dataflow index of one function: for each var its definition (param,
// call, tuple, tuple item, alias of another var, constant) and its users
// (the bindings whose values use it, and the return), which bindings the
// return needs (liveness), and forward dependence. Passes, the executor's
// planning, the verifier and the pattern matcher read def/use here instead
// of walking the function themselves; operands() / for_each_operand is the
// one walk over an expr's operands.
//
// Cost: each part is built on its first query and kept, so a pass pays for
// what it reads, and every part is linear in the function's size.
//   - live(): one backward sweep over a set of the vars still wanted; it
//     reads nothing of a dead binding but its var's address.
//   - the live numbering and live_depends_on: the live part only.
//   - definitions: one look at each var (a VarIndexMap).
//   - operand_defs / binding_kind / binding_type: one forward walk over
//     every binding, kept as flat arrays; users (two passes over those arrays) and
//     depends_on read them, not the nodes, and so does any sweep a pass
//     makes backward, where fetching nodes ahead helps least.
// So DCE (liveness) and Gradient (the live part) cost what the live part of
// a mostly dead function costs. The definitions and the live numbering
// each cache their indices in the vars (VarIndexMap): a pass that reads both
// pays a hash lookup in one of them. An index is for one thread (its parts
// are built lazily) and refers to the function, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/ir/var_map.h"

namespace aj {

// A read-only view of `count` contiguous Ts (C++17 has no std::span).
template <typename T>
class ConstSpan {
 public:
  ConstSpan(const T* first, size_t count) : first_(first), count_(count) {}
  const T* begin() const { return first_; }
  const T* end() const { return first_ + count_; }
  size_t size() const { return count_; }
  const T& operator[](size_t i) const { return first_[i]; }

 private:
  const T* first_;
  size_t count_;
};

// The direct operands of an expr, in order (a view into the node, valid
// while it lives).
using Operands = ConstSpan<Expr>;

// A call's args, a tuple's fields, a tuple item's tuple. Vars and constants
// have none.
inline Operands operands(const ExprNode& e) {
  switch (e.kind()) {
    case ExprKind::kCall: {
      const auto& args = static_cast<const CallNode&>(e).args();
      return Operands(args.data(), args.size());
    }
    case ExprKind::kTuple: {
      const auto& fields = static_cast<const TupleNode&>(e).fields();
      return Operands(fields.data(), fields.size());
    }
    case ExprKind::kTupleGetItem:
      return Operands(&static_cast<const TupleGetItemNode&>(e).tuple(), 1);
    case ExprKind::kVar:
    case ExprKind::kConstant:
      break;
  }
  return Operands(nullptr, 0);
}

// f(operand) for each direct operand of e (see operands()).
template <class F>
void for_each_operand(const ExprNode& e, F&& f) {
  for (const Expr& a : operands(e)) f(a);
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

// f(var) for each var that e uses, each nested expr walked once however
// often e shares it: for a value made outside the function (a rewriter's
// new value, which may be a DAG: forty nested add(x, x) are 41 nodes and
// 2**40 paths). Vars may come more than once, in no promised order.
template <class F>
void for_each_var_use_in_dag(const Expr& e, F&& f) {
  std::vector<const ExprNode*> stack{e.get()};
  std::unordered_set<const ExprNode*> walked;
  while (!stack.empty()) {
    const ExprNode* n = stack.back();
    stack.pop_back();
    if (n->kind() == ExprKind::kVar) {
      f(static_cast<const VarNode*>(n));
      continue;
    }
    for (const Expr& a : operands(*n))
      if (a->kind() == ExprKind::kVar || walked.insert(a.get()).second) stack.push_back(a.get());
  }
}

enum class DefKind : uint8_t { kUndefined, kParam, kCall, kTuple, kTupleGetItem, kAlias, kConstant };

// The def indices of the vars one binding's value uses (see
// DataflowIndex::operand_defs): -1 for a var the function does not define.
using DefIndices = ConstSpan<int32_t>;

class DataflowIndex {
 public:
  using VarPredicate = std::function<bool(const VarNode*)>;

  explicit DataflowIndex(const FunctionNode& fn);

  const FunctionNode& function() const { return fn_; }

  // ---- definitions ----

  // How v is defined here; kUndefined for a var the function does not
  // define (a free var, or one of another function).
  DefKind def_kind(const VarNode* v) const;
  bool is_param(const VarNode* v) const { return def_kind(v) == DefKind::kParam; }
  // v's position among the params, or -1.
  int64_t param_index(const VarNode* v) const;
  // The position of the binding that defines v, or -1 (params, free vars).
  int64_t binding_index(const VarNode* v) const;
  // v's definition index: params 0..P-1, then binding vars P, P+1, ... in
  // order; -1 for a var the function does not define. A var defined twice
  // (malformed IR) keeps its first. For tables over the function's vars.
  int64_t def_index(const VarNode* v) const { return defs()(v); }
  // How many definitions there are: params plus bindings.
  size_t num_defs() const { return num_params_ + fn_.bindings().size(); }
  // The value v is bound to, or nullptr (params, free vars).
  const Expr* value(const VarNode* v) const;
  // The call v is bound to, or nullptr.
  const CallNode* call(const VarNode* v) const;
  // The call e is bound to when e is a var bound to a call, else nullptr.
  const CallNode* call(const Expr& e) const;

  // ---- operands by def index ----

  // The def indices of the vars binding b's value uses, in for_each_var_use's
  // order, repeats included; -1 for a var the function does not define.
  DefIndices operand_defs(size_t b) const {
    if (!has_operands_) build_operands();
    return DefIndices(operand_defs_.data() + operand_start_[b], operand_start_[b + 1] - operand_start_[b]);
  }
  // What binding b's value is (kCall, kTuple, kTupleGetItem, kAlias,
  // kConstant; kUndefined for a null value), read from the same walk.
  DefKind binding_kind(size_t b) const {
    if (!has_operands_) build_operands();
    return binding_kinds_[b];
  }
  // The type of binding b's var (nullptr for a null var), from the same walk.
  const TypeNode* binding_type(size_t b) const {
    if (!has_operands_) build_operands();
    return binding_types_[b];
  }

  // ---- users ----

  // The bindings whose values use v, by position, ascending, each once.
  std::vector<int64_t> users(const VarNode* v) const;
  // Whether the returned expr uses v.
  bool used_by_return(const VarNode* v) const;
  // How many bindings use v, plus one when the return does.
  size_t num_users(const VarNode* v) const;

  // ---- liveness and dependence ----

  // Which bindings the returned value depends on (1) or not (0), by position.
  const std::vector<uint8_t>& live() const;
  // v's live index: params 0..P-1, then the live binding vars P, P+1, ...
  // in order; -1 for a dead binding's var or a var the function does not
  // define. For tables over the vars the return needs.
  int64_t live_index(const VarNode* v) const;
  // How many live indices there are: params plus live bindings.
  size_t num_live_defs() const;

  // Per binding: 1 when its value depends, directly or through earlier
  // bindings, on a param or binding var for which `seed` is true.
  std::vector<uint8_t> depends_on(const VarPredicate& seed) const;
  // depends_on among the live bindings only: a dead binding is 0 and is not
  // read (not even seed(its var)), so the cost is that of the live part.
  std::vector<uint8_t> live_depends_on(const VarPredicate& seed) const;

 private:
  const VarIndexMap& defs() const { return defs_ ? *defs_ : build_defs(); }
  const VarIndexMap& build_defs() const;
  const VarIndexMap& live_defs() const;
  void build_operands() const;
  void build_users() const;
  void build_live() const;
  std::vector<uint8_t> seeded_params(const VarPredicate& seed, size_t size) const;

  const FunctionNode& fn_;
  size_t num_params_;
  // Each built on first use (see the file comment):
  mutable std::unique_ptr<VarIndexMap> defs_;       // params, then binding vars
  mutable std::unique_ptr<VarIndexMap> live_defs_;  // params, then live binding vars
  mutable bool has_operands_ = false;
  mutable std::vector<size_t> operand_start_;   // by binding, CSR offsets into operand_defs_ (size bindings + 1)
  mutable std::vector<int32_t> operand_defs_;   // def indices of the vars each binding's value uses
  mutable std::vector<DefKind> binding_kinds_;  // by binding
  mutable std::vector<const TypeNode*> binding_types_;  // by binding
  mutable bool has_users_ = false;
  mutable std::vector<uint8_t> returned_;    // by def index: the return uses it
  mutable std::vector<int64_t> user_start_;  // by def index, CSR offsets into users_ (size num_defs + 1)
  mutable std::vector<int64_t> users_;       // binding positions, grouped by the var used
  mutable bool has_live_ = false;
  mutable std::vector<uint8_t> live_;        // by binding
};

}  // namespace aj
