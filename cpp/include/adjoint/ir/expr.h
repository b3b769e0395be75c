// Expressions of the IR: Var, Constant, Call, Tuple, TupleGetItem.
// Nodes are immutable and shared through shared_ptr<const ...>; every node
// carries its type, filled in at construction. A Var's identity is its
// address: two Vars with the same name hint are different Vars.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adjoint/ir/attrs.h"
#include "adjoint/ir/ndarray.h"
#include "adjoint/ir/type.h"

namespace aj {

struct OpDef;  // op/registry.h

enum class ExprKind : uint8_t { kVar, kConstant, kCall, kTuple, kTupleGetItem };

// How deeply exprs may nest (a tuple of a tuple of ..., a call of a call of
// ...). Every walk over an expr recurses, so the constructors refuse deeper
// nesting with a TypeInferenceError: the C++ stack stays bounded whatever
// Python builds, and anything built prints as text the parser reads back.
constexpr int kMaxExprDepth = 100;

class ExprNode {
 public:
  virtual ~ExprNode() = default;
  ExprKind kind() const { return kind_; }
  const Type& type() const { return type_; }
  // 0 for vars and constants, else 1 + the deepest operand's depth.
  int depth() const { return depth_; }

 protected:
  ExprNode(ExprKind kind, Type type, int depth = 0)
      : kind_(kind), depth_(static_cast<uint16_t>(depth)), type_(std::move(type)) {}

 private:
  ExprKind kind_;
  uint16_t depth_;

 protected:
  // Scratch for VarNode (it sits in padding, so it costs no space).
  mutable std::atomic<uint32_t> scratch_{0};

 private:
  Type type_;
};
using Expr = std::shared_ptr<const ExprNode>;

class VarNode : public ExprNode {
 public:
  VarNode(std::string name_hint, Type type)
      : ExprNode(ExprKind::kVar, std::move(type)), name_hint_(std::move(name_hint)) {}
  const std::string& name_hint() const { return name_hint_; }

  // Where the var was last seen defined by a VarIndexMap: a cache that lets
  // a lookup read one array slot near the previous one instead of probing a
  // hash table at random. Any value is safe; the map checks it.
  uint32_t index_hint() const { return scratch_.load(std::memory_order_relaxed); }
  void set_index_hint(uint32_t i) const { scratch_.store(i, std::memory_order_relaxed); }

 private:
  std::string name_hint_;
};
using Var = std::shared_ptr<const VarNode>;

class ConstantNode : public ExprNode {
 public:
  explicit ConstantNode(NDArray data);
  const NDArray& data() const { return data_; }

 private:
  NDArray data_;
};
using Constant = std::shared_ptr<const ConstantNode>;

class CallNode : public ExprNode {
 public:
  CallNode(const OpDef* op, std::vector<Expr> args, Attrs attrs, Type type);
  const OpDef& op() const { return *op_; }
  const std::vector<Expr>& args() const { return args_; }
  const Attrs& attrs() const { return attrs_; }

 private:
  const OpDef* op_;
  std::vector<Expr> args_;
  Attrs attrs_;
};
using Call = std::shared_ptr<const CallNode>;

class TupleNode : public ExprNode {
 public:
  explicit TupleNode(std::vector<Expr> fields);
  const std::vector<Expr>& fields() const { return fields_; }

 private:
  std::vector<Expr> fields_;
};
using Tuple = std::shared_ptr<const TupleNode>;

class TupleGetItemNode : public ExprNode {
 public:
  // Throws TypeInferenceError if `tuple` is not a tuple or index is out of range.
  TupleGetItemNode(Expr tuple, int64_t index);
  const Expr& tuple() const { return tuple_; }
  int index() const { return index_; }

 private:
  Expr tuple_;
  int index_;
};
using TupleGetItem = std::shared_ptr<const TupleGetItemNode>;

// Downcasts; return nullptr when the kind differs.
template <typename T> const T* as(const Expr& e);
template <> inline const VarNode* as<VarNode>(const Expr& e) {
  return e && e->kind() == ExprKind::kVar ? static_cast<const VarNode*>(e.get()) : nullptr;
}
template <> inline const ConstantNode* as<ConstantNode>(const Expr& e) {
  return e && e->kind() == ExprKind::kConstant ? static_cast<const ConstantNode*>(e.get()) : nullptr;
}
template <> inline const CallNode* as<CallNode>(const Expr& e) {
  return e && e->kind() == ExprKind::kCall ? static_cast<const CallNode*>(e.get()) : nullptr;
}
template <> inline const TupleNode* as<TupleNode>(const Expr& e) {
  return e && e->kind() == ExprKind::kTuple ? static_cast<const TupleNode*>(e.get()) : nullptr;
}
template <> inline const TupleGetItemNode* as<TupleGetItemNode>(const Expr& e) {
  return e && e->kind() == ExprKind::kTupleGetItem ? static_cast<const TupleGetItemNode*>(e.get())
                                                   : nullptr;
}
inline Var as_var(const Expr& e) {
  return e && e->kind() == ExprKind::kVar ? std::static_pointer_cast<const VarNode>(e) : nullptr;
}

// A leaf is what may appear as a call argument in A-normal form: a Var, a
// Constant, or a Tuple whose fields are leaves.
bool is_leaf(const Expr& e);

// Builds a call, filling attr defaults and inferring its type through the op's
// rule. Throws TypeInferenceError naming the op.
Call make_call(const OpDef& op, std::vector<Expr> args, Attrs attrs);

}  // namespace aj
