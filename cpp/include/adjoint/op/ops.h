// Typed handles of the ops listed in op_list.def. Code that builds or
// recognizes calls of a given op (VJP rules, passes, the executor) names it
// as ops::matmul, never by a string: a misspelt op does not compile, and
// asking whether a call is of an op compares two small integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/expr.h"

namespace aj {

enum class OpId : uint16_t {
#define AJ_OP(family, name) name,
#include "adjoint/op/op_list.def"
#undef AJ_OP
};

inline constexpr size_t kNumOps = 0
#define AJ_OP(family, name) +1
#include "adjoint/op/op_list.def"
#undef AJ_OP
    ;

// Attrs by name, for building a call (defaults fill the rest).
using KwAttrs = std::vector<std::pair<std::string, AttrValue>>;

class OpHandle {
 public:
  constexpr OpHandle(OpId id, const char* name, const char* family) : id_(id), name_(name), family_(family) {}
  OpId id() const { return id_; }
  const char* name() const { return name_; }
  // The family op_list.def lists it under: the cpp/src/op/ file defining it.
  const char* family() const { return family_; }
  const OpDef& def() const;
  // op(args, attrs) as an unbound call: defaults filled, type inferred
  // (a TypeInferenceError naming the op when the args do not fit).
  Call operator()(std::vector<Expr> args, const KwAttrs& attrs = {}) const;

 private:
  OpId id_;
  const char* name_;
  const char* family_;
};

bool operator==(const OpDef& def, OpHandle op);
inline bool operator!=(const OpDef& def, OpHandle op) { return !(def == op); }
// Whether c is a call of op (false for nullptr).
bool is_call_of(const CallNode* c, OpHandle op);

namespace ops {
#define AJ_OP(family, name) inline constexpr OpHandle name{OpId::name, #name, #family};
#include "adjoint/op/op_list.def"
#undef AJ_OP
}  // namespace ops

// The name of op id, as op_list.def spells it.
const char* op_name(OpId id);

}  // namespace aj
