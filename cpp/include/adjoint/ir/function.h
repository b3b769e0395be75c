// Functions (params, ordered bindings, a returned expr, attrs) and modules
// (an ordered map name -> function). Both immutable and shared; passes build
// new ones.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "adjoint/ir/expr.h"

namespace aj {

struct Binding {
  Var var;
  Expr value;  // a Call, Tuple, TupleGetItem, Constant or Var
};

// The function attrs adjoint knows: the one list that the parser, the
// verifier and the Python API check names against. num_input (an int): the
// first k params are run-time inputs, the rest weights; frozen (a string):
// the names of weights training reads but does not update, separated by
// ", " (aj.from_torch gives a module's buffers); doc (a string): free text
// kept with the function.
const std::vector<std::string>& known_func_attrs();
bool is_known_func_attr(std::string_view name);
// Empty when attr `name` holding `value` is a known attr of the right kind,
// else what is wrong ("unknown function attr 'num_inputs' (known: num_input,
// frozen, doc)"). num_input's range is checked against the params elsewhere.
std::string func_attr_problem(const std::string& name, const AttrValue& value);
// The names a frozen attr's string lists, in its order: split at commas,
// white space around each name dropped; a blank string lists none. An empty
// name ("a,,b", "a,") is kept as "" for the verifier to report.
std::vector<std::string> split_frozen_names(const std::string& text);
// What is wrong with the frozen attr `text` of a function whose params have
// these names and whose num_input is `num_input` (-1 when it has none), or
// "" when nothing is: each name must be the name of one weight (a param
// from num_input on, the only param of that name), listed once, not empty.
// The parser and the verifier both ask.
std::string frozen_attr_problem(const std::string& text, const std::vector<std::string_view>& params,
                                int64_t num_input);

class FunctionNode;
using Function = std::shared_ptr<const FunctionNode>;

// Its attrs are kept in canonical order, the order they print in: the known
// ones in known_func_attrs() order (num_input, frozen, doc), then others by name.
class FunctionNode {
 public:
  FunctionNode(std::vector<Var> params, std::vector<Binding> bindings, Expr ret,
               FuncAttrs attrs = {});
  ~FunctionNode();
  const std::vector<Var>& params() const { return params_; }
  const std::vector<Binding>& bindings() const { return bindings_; }
  const Expr& ret() const { return ret_; }
  const Type& ret_type() const { return ret_->type(); }
  const FuncAttrs& attrs() const { return attrs_; }
  const AttrValue* attr(const std::string& name) const;
  // num_input attr, or the param count when absent.
  size_t num_input() const;
  // The names the frozen attr lists (split_frozen_names); none when it is
  // absent or not a string (which the verifier reports).
  std::vector<std::string> frozen_names() const;
  Function with_attr(const std::string& name, AttrValue value) const;

  // The bindings of the function `fn` holds, to move from, when `fn` holds
  // the only reference to it: for a pass rebuilding a function it made
  // itself, which then drops `fn` (moving spares each binding's nodes two
  // reference-count writes, a cache miss each on a large function). nullptr
  // while anything else shares the function. (No FunctionNode is made const,
  // so the sole owner may change it.)
  static std::vector<Binding>* sole_bindings(Function& fn);

  // The highest verifier level (analysis/verifier.h: 1 structure, 2 full)
  // this function has passed with no problem, 0 when none. The IR is
  // immutable, so a function verified once stays well formed: the verifier
  // skips it after that, and a pipeline of passes verifies each function once.
  int verified_level() const { return verified_level_.load(std::memory_order_acquire); }
  void mark_verified(int level) const {
    int seen = verified_level_.load(std::memory_order_relaxed);
    while (seen < level && !verified_level_.compare_exchange_weak(seen, level, std::memory_order_release)) {}
  }

 private:
  mutable std::atomic<int> verified_level_{0};
  std::vector<Var> params_;
  std::vector<Binding> bindings_;
  Expr ret_;
  FuncAttrs attrs_;
};

class ModuleNode;
using Module = std::shared_ptr<const ModuleNode>;

// Every function name is a valid name (ir/names.h), else an Error naming it.
class ModuleNode {
 public:
  explicit ModuleNode(std::vector<std::pair<std::string, Function>> functions);
  const std::vector<std::pair<std::string, Function>>& functions() const { return functions_; }
  Function lookup(const std::string& name) const;  // nullptr when absent
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // A new module with `name` added, or replaced in place when present.
  Module with_function(const std::string& name, Function fn) const;

 private:
  std::vector<std::pair<std::string, Function>> functions_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace aj
