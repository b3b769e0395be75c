// FunctionBuilder: builds a function binding by binding. emit() normalizes to
// A-normal form (a nested call argument is emitted first into its own
// binding), infers types through the op registry, and de-duplicates name
// hints ("lv", "lv_1", "lv_2", ...).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

class FunctionBuilder {
 public:
  // With unique_names=false, name hints are taken as given (repeats are
  // legal IR; the printer makes printed names unique): for passes that
  // build large functions and do not need distinct hints.
  explicit FunctionBuilder(FuncAttrs attrs = {}, bool unique_names = true)
      : attrs_(std::move(attrs)), unique_names_(unique_names) {}

  Var add_param(const std::string& name, Type type);
  // Takes an existing var as a param, or an existing A-normal-form binding as
  // is: for passes that build a function sharing another's vars and values.
  void add_existing_param(const Var& v) { params_.push_back(v); }
  void push_binding(const Binding& b) { bindings_.push_back(b); }
  // Makes room for n more bindings and names (a hint for large functions).
  void reserve(size_t n) {
    bindings_.reserve(bindings_.size() + n);
    if (unique_names_) names_.reserve(names_.size() + n);
  }
  // Keeps `name` from being handed out by later de-duplication.
  void reserve_name(const std::string& name) { names_.insert(name); }
  // A fresh name for `hint` ("lv" when empty), unique in this function.
  std::string unique_name(const std::string& hint);

  // Binds `value` to a new var. Args of a call, fields of a tuple and the
  // tuple of a TupleGetItem that are not leaves are emitted first.
  Var emit(const Expr& value, const std::string& name_hint = "");
  // Binds value to a var whose name is taken as is (it must be unused).
  Var emit_named(const Expr& value, const std::string& exact_name);
  // Makes a call (defaults filled, type inferred) and emits it.
  Var emit_call(const OpDef& op, std::vector<Expr> args, Attrs attrs,
                const std::string& name_hint = "");
  // Returns e if it is a leaf, else emits it and returns its var.
  Expr normalize(const Expr& e);

  Function finish(const Expr& ret);
  size_t num_bindings() const { return bindings_.size(); }
  const std::vector<Binding>& bindings() const { return bindings_; }
  const std::vector<Var>& params() const { return params_; }

 private:
  Expr normalize_value(const Expr& value);
  FuncAttrs attrs_;
  std::vector<Var> params_;
  std::vector<Binding> bindings_;
  bool unique_names_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, size_t> next_suffix_;
};

}  // namespace aj
