// The Python face of FunctionBuilder (aj.FunctionBuilder wraps it) and the
// record of which builder defined each var. Every var a builder makes is
// registered with the builder's state, so a value used in a builder that did
// not make it, or in one that is finished or was abandoned after an error, is
// an error at the line that used it instead of a free var found much later.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/builder.h"
#include "adjoint/ir/substitute.h"
#include "adjoint/ir/var_map.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"
#include "convert.h"

namespace py = pybind11;

namespace aj::bindings {
namespace {

using PyVar = std::shared_ptr<VarNode>;
using PyModule = std::shared_ptr<ModuleNode>;

// What the vars of one builder refer to: it outlives the builder, so a var
// kept after its builder is gone still says where it came from.
struct BuilderState {
  enum class Status { kActive, kFinished, kAbandoned, kDropped };
  std::string name;
  uint64_t serial = 0;
  Status status = Status::kActive;
  std::string abandoned_by;  // the first line of the error that abandoned it
};
using State = std::shared_ptr<BuilderState>;

// Var -> the builder that defined it, for every var a builder made. Entries
// hold the var weakly: a var that died leaves a stale entry (its address may
// be reused by an unrelated var), swept out as the map grows. Used with the
// GIL held.
class VarOwners {
 public:
  static VarOwners& global() {
    static VarOwners owners;
    return owners;
  }

  void add(const Var& v, const State& owner) {
    if (map_.size() >= sweep_at_) sweep();
    map_[v.get()] = Entry{v, owner};
  }

  // The builder that defined v, or null when none did (or the entry is stale).
  State owner(const VarNode* v) const {
    auto it = map_.find(v);
    if (it == map_.end()) return nullptr;
    auto alive = it->second.var.lock();
    return alive.get() == v ? it->second.owner : nullptr;
  }

 private:
  struct Entry {
    std::weak_ptr<const VarNode> var;
    State owner;
  };

  void sweep() {
    for (auto it = map_.begin(); it != map_.end();) it = it->second.var.expired() ? map_.erase(it) : std::next(it);
    sweep_at_ = std::max<size_t>(kMinSweep, 2 * map_.size());
  }

  static constexpr size_t kMinSweep = 4096;
  std::unordered_map<const VarNode*, Entry> map_;
  size_t sweep_at_ = kMinSweep;
};

// Calls f(var) for each var in the exprs (through tuples, items and calls),
// in the order they are written.
template <typename F>
void for_each_var(const std::vector<Expr>& exprs, F&& f) {
  std::vector<const ExprNode*> todo;  // a stack: operands pushed last to first are visited in order
  auto push_all = [&](const std::vector<Expr>& es) {
    for (auto it = es.rbegin(); it != es.rend(); ++it)
      if (*it) todo.push_back(it->get());
  };
  push_all(exprs);
  while (!todo.empty()) {
    const ExprNode* e = todo.back();
    todo.pop_back();
    switch (e->kind()) {
      case ExprKind::kVar: f(static_cast<const VarNode&>(*e)); break;
      case ExprKind::kTuple: push_all(static_cast<const TupleNode&>(*e).fields()); break;
      case ExprKind::kTupleGetItem: todo.push_back(static_cast<const TupleGetItemNode&>(*e).tuple().get()); break;
      case ExprKind::kCall: push_all(static_cast<const CallNode&>(*e).args()); break;
      case ExprKind::kConstant: break;
    }
  }
}

std::string label(const BuilderState& s) { return "FunctionBuilder '" + s.name + "'"; }

// Why a var of `owner` cannot be used any more; empty while the owner is active.
std::string unusable(const BuilderState& owner) {
  switch (owner.status) {
    case BuilderState::Status::kActive: return "";
    case BuilderState::Status::kFinished: return "which is finished";
    case BuilderState::Status::kDropped: return "which was dropped unfinished";
    case BuilderState::Status::kAbandoned:
      return "which was abandoned after an error (" + owner.abandoned_by + "); create a new FunctionBuilder";
  }
  return "";
}

// The builder owning the first owned var of the exprs: where an op on them goes.
State first_owner(const std::vector<Expr>& exprs) {
  State found;
  for_each_var(exprs, [&](const VarNode& v) {
    if (!found) found = VarOwners::global().owner(&v);
  });
  return found;
}

// The Python face of FunctionBuilder: ops by name, attrs from Python values,
// every var it makes registered as its own.
class PyFunctionBuilder {
 public:
  PyFunctionBuilder(const py::handle& name, const py::handle& attrs)
      : state_(std::make_shared<BuilderState>()) {
    static uint64_t next_serial = 0;
    state_->name = checked_function_name(string_arg(name, "FunctionBuilder: name"), "FunctionBuilder");
    state_->serial = ++next_serial;
    builder_ = std::make_unique<FunctionBuilder>(func_attrs_in(attrs, "FunctionBuilder '" + state_->name + "'"));
  }
  ~PyFunctionBuilder() {
    if (state_->status == BuilderState::Status::kActive) state_->status = BuilderState::Status::kDropped;
  }
  PyFunctionBuilder(const PyFunctionBuilder&) = delete;
  PyFunctionBuilder& operator=(const PyFunctionBuilder&) = delete;

  PyVar param(const py::handle& name_arg, const py::handle& shape, const py::handle& dtype) {
    live("param");
    std::string name = string_arg(name_arg, "param: name");
    Type t = tensor_type_from_py(shape, dtype, "param '" + name + "'");
    return own(builder_->add_param(name, t));
  }

  PyVar param_of_type(const py::handle& name_arg, const py::handle& type) {
    live("param");
    std::string name = string_arg(name_arg, "param: name");
    return own(builder_->add_param(name, node_arg<TypeNode>(type, "param '" + name + "'", "an aj.Type")));
  }

  PyVar emit_call(const std::string& op_name, const py::handle& args, const py::list& positional,
                  const py::handle& keyword, const py::handle& name) {
    std::string what = "aj.op." + op_name;
    const OpDef& op = OpRegistry::global().get(op_name);
    std::vector<Expr> in = exprs_in(args, What("op '", op_name, "'"));
    check_owned(in, what);  // first: a var of a finished or abandoned builder is named
    live(what);
    std::vector<AttrValue> pos;
    for (const auto& v : positional) pos.push_back(attr_from_py(v, What("op '", op_name, "'")));
    Attrs attrs = resolve_attrs(op, pos, call_attrs_in(op, keyword));
    size_t before = builder_->num_bindings();
    Var out = builder_->emit_call(op, std::move(in), std::move(attrs), string_arg(name, What("op '", op_name, "': name")));
    own_bindings_from(before);
    return unconst(out);
  }

  PyVar emit(const py::handle& value, const py::handle& name) {
    std::string what = label(*state_) + ".emit";
    Expr e = expr_arg(value, "emit");
    check_owned({e}, what);
    live(what);
    size_t before = builder_->num_bindings();
    Var out = builder_->emit(e, string_arg(name, "emit: name"));
    own_bindings_from(before);
    return unconst(out);
  }

  // Calls `fn` by inlining it: emits its bindings (names kept, made unique)
  // with its params replaced by `args`, one expr of the param's type each,
  // and returns its result over the new vars.
  py::object inline_function(const py::handle& fn_arg, const py::handle& args_arg) {
    std::string what = label(*state_) + ".inline";
    if (fn_arg.is_none() || !py::isinstance<NamedFunction>(fn_arg))
      throw Error(str(what, ": expected an aj.Function, got ", fn_arg.is_none() ? "None" : py_type_name(fn_arg)));
    Function fn = fn_arg.cast<const NamedFunction&>().fn;
    std::vector<Expr> args = exprs_in(args_arg, what);
    check_owned(args, what);
    live(what);
    const auto& params = fn->params();
    if (args.size() != params.size())
      throw TypeInferenceError(str(what, ": the function takes ", params.size(), " argument(s), got ", args.size()));
    VarTable<Expr> replaced(*fn);
    for (size_t i = 0; i < params.size(); ++i) {
      if (!type_equal(args[i]->type(), params[i]->type()))
        throw TypeInferenceError(str(what, ": param '", params[i]->name_hint(), "' (#", i, ") is ",
                                     params[i]->type()->to_string(), ", the argument is ", args[i]->type()->to_string()));
      replaced.set(params[i].get(), args[i]);
    }
    auto lookup = [&](const VarNode* v) -> const Expr* { return replaced.find(v); };
    size_t before = builder_->num_bindings();
    for (const Binding& b : fn->bindings())
      replaced.set(b.var.get(), builder_->emit(substitute(b.value, lookup), b.var->name_hint()));
    own_bindings_from(before);
    return py::cast(unconst(substitute(fn->ret(), lookup)));
  }

  // Ends the function and verifies it; a problem (a free var, num_input out
  // of range) is a VerifyError naming the var.
  PyModule finish(const py::handle& ret) {
    std::string what = label(*state_) + ".finish";
    Expr r = expr_arg(ret, "finish");
    check_owned({r}, what);
    live(what);
    Function fn = builder_->finish(r);
    builder_.reset();
    Module mod = std::make_shared<const ModuleNode>(std::vector<std::pair<std::string, Function>>{{state_->name, fn}});
    std::vector<std::string> problems = verify_problems(mod, VerifyLevel::kStructure);
    if (!problems.empty()) {
      std::string more = problems.size() > 1 ? str(" (and ", problems.size() - 1, " more)") : "";
      throw VerifyError(str(what, ": ", problems.front(), more));
    }
    state_->status = BuilderState::Status::kFinished;
    return unconst(mod);
  }

  // Marks the builder unusable after an error raised while building.
  void abandon(const std::string& reason) {
    if (state_->status != BuilderState::Status::kActive) return;
    state_->status = BuilderState::Status::kAbandoned;
    state_->abandoned_by = reason;
    builder_.reset();
  }

  const std::string& name() const { return state_->name; }
  uint64_t serial() const { return state_->serial; }
  std::string status() const {
    switch (state_->status) {
      case BuilderState::Status::kActive: return "active";
      case BuilderState::Status::kFinished: return "finished";
      case BuilderState::Status::kAbandoned: return "abandoned";
      case BuilderState::Status::kDropped: return "dropped";
    }
    return "";
  }
  py::list params() const {
    live("params");
    py::list out;
    for (const auto& p : builder_->params()) out.append(unconst(p));
    return out;
  }

 private:
  void live(const std::string& what) const {
    if (state_->status == BuilderState::Status::kFinished)
      throw Error(str(what, ": ", label(*state_), " is already finished"));
    if (state_->status == BuilderState::Status::kAbandoned)
      throw Error(str(what, ": ", label(*state_), " was abandoned after an error (", state_->abandoned_by,
                      "); create a new FunctionBuilder"));
  }

  // Every var of the exprs was made by this builder (or by none: aj.Var,
  // vars of parsed modules, which finish's verification judges).
  void check_owned(const std::vector<Expr>& exprs, const std::string& what) const {
    const VarNode* first_mine = nullptr;
    for_each_var(exprs, [&](const VarNode& v) {
      State owner = VarOwners::global().owner(&v);
      if (!owner) return;
      std::string why = unusable(*owner);
      std::string message = str(what, ": '", v.name_hint(), "' belongs to ", label(*owner), ", ", why);
      if (owner->status == BuilderState::Status::kFinished) throw TypeInferenceError(message);
      if (!why.empty()) throw Error(message);
      if (owner == state_) {
        if (!first_mine) first_mine = &v;
        return;
      }
      std::string other = owner->name == state_->name ? "another " + label(*owner) : label(*owner);
      std::string mine = first_mine ? " (the builder of '" + first_mine->name_hint() + "')" : "";
      throw TypeInferenceError(str(what, ": '", v.name_hint(), "' was built by ", other, ", not '", state_->name, "'", mine));
    });
  }

  PyVar own(const Var& v) {
    VarOwners::global().add(v, state_);
    return unconst(v);
  }

  void own_bindings_from(size_t first) {
    const auto& bindings = builder_->bindings();
    for (size_t i = first; i < bindings.size(); ++i) VarOwners::global().add(bindings[i].var, state_);
  }

  State state_;
  std::unique_ptr<FunctionBuilder> builder_;
};

}  // namespace

void bind_builder(py::module_& m) {
  py::class_<PyFunctionBuilder>(m, "_FunctionBuilder")
      .def(py::init<py::handle, py::handle>(), py::arg("name"), py::arg("attrs"))
      .def("param", &PyFunctionBuilder::param, py::arg("name"), py::arg("shape"), py::arg("dtype"))
      .def("param_of_type", &PyFunctionBuilder::param_of_type, py::arg("name"), py::arg("type"))
      .def("emit_call", &PyFunctionBuilder::emit_call, py::arg("op"), py::arg("args"),
           py::arg("positional"), py::arg("keyword"), py::arg("name") = py::str(""))
      .def("emit", &PyFunctionBuilder::emit, py::arg("value"), py::arg("name") = py::str(""))
      .def("inline_function", &PyFunctionBuilder::inline_function, py::arg("fn"), py::arg("args"))
      .def("finish", &PyFunctionBuilder::finish, py::arg("ret"))
      .def("abandon", &PyFunctionBuilder::abandon, py::arg("reason"))
      .def_property_readonly("name", &PyFunctionBuilder::name)
      .def_property_readonly("serial", &PyFunctionBuilder::serial)
      .def_property_readonly("status", &PyFunctionBuilder::status)
      .def_property_readonly("params", &PyFunctionBuilder::params);
  m.def("_owner_serial", [](const py::handle& exprs) -> std::optional<uint64_t> {
    State owner = first_owner(exprs_in(exprs, "_owner_serial"));
    if (!owner) return std::nullopt;
    return owner->serial;
  }, py::arg("exprs"), "The serial of the builder that made the first var in the exprs, or None.");
}

}  // namespace aj::bindings
