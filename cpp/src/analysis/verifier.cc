// The verifier (analysis/verifier.h): each function name against the text
// format's rule (ir/names.h), then one pass over each function that checks
// binding discipline (against the definitions of the function's
// dataflow index), A-normal form, known function attrs, var types against
// their values' and, at the full level, each call's type and attrs against
// its op's rules, collecting every problem with its place.
#include "adjoint/analysis/verifier.h"

#include <algorithm>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/binding_walk.h"
#include "adjoint/ir/names.h"
#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(const std::string& name, const FunctionNode& fn, VerifyLevel level,
                   std::vector<std::string>& out)
      : name_(name), fn_(fn), level_(level), out_(out), index_(fn) {}

  void run() {
    check_definitions();
    check_attrs();
    check_frozen();
    for_each_binding(fn_.bindings(), [this](size_t i, const Binding& b) { check_binding(i, b); });
    where_ = Place{"the return value"};
    defined_ = static_cast<int64_t>(index_.num_defs());
    check_leaf(fn_.ret());
  }

 private:
  // Where the verifier is, kept cheap and formatted only when a problem is found.
  struct Place {
    const char* what = "";  // "param", "binding", "the return value", "attrs", "attr num_input", "attr frozen"
    size_t index = 0;       // of the param or binding
    const VarNode* var = nullptr;
  };

  static std::string describe(const Place& p) {
    std::string out = p.what;
    if (out == "param" || out == "binding") out += " " + std::to_string(p.index);
    if (p.var) out += " '" + p.var->name_hint() + "'";
    return out;
  }

  template <typename... Parts>
  void problem(const Parts&... parts) {
    out_.push_back(str("function '", name_, "', ", describe(where_), ": ", parts...));
  }

  // The place of definition index i (params first, then bindings).
  Place definition(int64_t i) const {
    size_t np = fn_.params().size();
    size_t k = static_cast<size_t>(i);
    if (k < np) return Place{"param", k, fn_.params()[k].get()};
    return Place{"binding", k - np, fn_.bindings()[k - np].var.get()};
  }

  // Every param and binding var is non-null and defined once: the index keeps
  // a var's first definition, so a later one finds another index there.
  void check_definitions() {
    for (size_t k = 0; k < index_.num_defs(); ++k) {
      where_ = definition(static_cast<int64_t>(k));
      if (!where_.var) {
        problem("a null var");
        continue;
      }
      int64_t first = index_.def_index(where_.var);
      if (first != static_cast<int64_t>(k))
        problem("var '", where_.var->name_hint(), "' is bound twice (first at ", describe(definition(first)), ")");
    }
  }

  // Every attr is a known one of its kind (num_input also within the params).
  void check_attrs() {
    for (const auto& [name, value] : fn_.attrs()) {
      if (name == "num_input") continue;
      where_ = Place{"attrs"};
      if (std::string p = func_attr_problem(name, value); !p.empty()) problem(p);
    }
    const AttrValue* v = fn_.attr("num_input");
    if (!v) return;
    where_ = Place{"attr num_input"};
    const int64_t* n = std::get_if<int64_t>(v);
    if (!n) problem("must be an int, got ", attr_to_string(*v));
    else if (*n < 0 || static_cast<size_t>(*n) > fn_.params().size())
      problem(*n, " is outside [0, ", fn_.params().size(), "], the param count");
  }

  // The frozen attr's names are weights (params from num_input on), each
  // listed once; a function without num_input has no weights to name.
  void check_frozen() {
    const AttrValue* v = fn_.attr("frozen");
    const auto* text = v ? std::get_if<std::string>(v) : nullptr;
    if (!text) return;
    const AttrValue* k = fn_.attr("num_input");
    const int64_t* n = k ? std::get_if<int64_t>(k) : nullptr;
    if (k && (!n || *n < 0 || static_cast<size_t>(*n) > fn_.params().size())) return;  // num_input's own problem
    std::vector<std::string_view> params;
    for (const Var& p : fn_.params()) params.push_back(p ? std::string_view(p->name_hint()) : std::string_view());
    where_ = Place{"attr frozen"};
    if (std::string p = frozen_attr_problem(*text, params, n ? *n : -1); !p.empty()) problem(p);
  }

  // A var must be bound before use.
  void check_use(const VarNode& v) {
    int64_t i = index_.def_index(&v);
    if (i < 0)
      problem("uses var '", v.name_hint(), "', which the function does not bind (a free var)");
    else if (i >= defined_)
      problem("uses var '", v.name_hint(), "' before its binding (", describe(definition(i)), ")");
  }

  // e must be a leaf (a var, a constant, or a tuple of leaves) whose vars
  // are bound before here.
  void check_leaf(const Expr& e) {
    if (!e) {
      problem("a null expr");
      return;
    }
    switch (e->kind()) {
      case ExprKind::kVar:
        check_use(static_cast<const VarNode&>(*e));
        return;
      case ExprKind::kConstant:
        return;
      case ExprKind::kTuple:
        for_each_operand(*e, [this](const Expr& field) { check_leaf(field); });
        return;
      default:
        problem("a nested ", expr_kind_name(e), " where A-normal form needs a var, constant or tuple");
    }
  }

  static std::string expr_kind_name(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kCall: return "call to '" + static_cast<const CallNode&>(*e).op().name + "'";
      case ExprKind::kTupleGetItem: return "tuple item";
      default: return "expr";
    }
  }

  // The call's args, attrs and type against its op's rules (kFull only).
  void check_call_rules(const CallNode& call) {
    const OpDef& op = call.op();
    if (call.args().size() != op.arg_names.size()) {
      problem("op '", op.name, "' takes ", op.arg_names.size(), " argument(s), got ", call.args().size());
      return;
    }
    if (call.attrs().size() != op.attrs.size()) {
      problem("op '", op.name, "' has ", op.attrs.size(), " attr(s), the call holds ", call.attrs().size());
      return;
    }
    for (size_t i = 0; i < op.attrs.size(); ++i) {
      try {
        if (!attr_equal(coerce_attr(op, op.attrs[i], call.attrs()[i]), call.attrs()[i]))
          problem("op '", op.name, "': attr '", op.attrs[i].name, "' is not in normal form: ",
                  attr_to_string(call.attrs()[i]));
      } catch (const Error& e) {
        problem(e.what());
      }
    }
    try {
      TypeContext ctx{op, call.args(), call.attrs()};
      Type inferred = op.infer_type(ctx);
      if (!type_equal(inferred, call.type()))
        problem("call to '", op.name, "' has type ", call.type()->to_string(), " but its rule infers ",
                inferred->to_string());
    } catch (const Error& e) {
      problem(e.what());
    }
  }

  // A bound value is a leaf, or a call or tuple item whose operands are.
  void check_value(const Expr& value) {
    if (!value) {
      problem("a null value");
      return;
    }
    switch (value->kind()) {
      case ExprKind::kCall:
      case ExprKind::kTupleGetItem:
        for_each_operand(*value, [this](const Expr& operand) { check_leaf(operand); });
        break;
      default:
        check_leaf(value);
    }
    auto* call = as<CallNode>(value);
    if (call && level_ == VerifyLevel::kFull) check_call_rules(*call);
  }

  void check_binding(size_t i, const Binding& b) {
    where_ = Place{"binding", i, b.var.get()};
    defined_ = static_cast<int64_t>(fn_.params().size() + i);
    check_value(b.value);
    if (b.var && b.value && !type_equal(b.var->type(), b.value->type()))
      problem("var has type ", b.var->type()->to_string(), " but its value has type ",
              b.value->type()->to_string());
  }

  const std::string& name_;
  const FunctionNode& fn_;
  VerifyLevel level_;
  std::vector<std::string>& out_;
  DataflowIndex index_;   // each var's first definition
  Place where_;
  int64_t defined_ = 0;   // vars of definition index below this are bound here
};

}  // namespace

std::vector<std::string> verify_problems(const Module& mod, VerifyLevel level) {
  std::vector<std::string> out;
  const int rank = level == VerifyLevel::kFull ? 2 : 1;
  for (const auto& [name, fn] : mod->functions()) {
    if (std::string problem = function_name_problem(name); !problem.empty()) out.push_back(problem);
    if (fn->verified_level() >= rank) continue;
    const size_t before = out.size();
    FunctionVerifier(name, *fn, level, out).run();
    if (out.size() == before) fn->mark_verified(rank);
  }
  return out;
}

bool well_formed(const Module& mod) { return verify_problems(mod).empty(); }

namespace {

void throw_first(const std::vector<std::string>& problems, const std::string& prefix) {
  std::string msg = prefix + problems[0];
  if (problems.size() > 1) msg += str(" (and ", problems.size() - 1, " more problem(s))");
  throw VerifyError(msg);
}

}  // namespace

void verify(const Module& mod) {
  auto problems = verify_problems(mod);
  if (!problems.empty()) throw_first(problems, "");
}

void verify_input(const Module& mod, const std::string& user) {
  auto problems = verify_problems(mod, VerifyLevel::kStructure);
  if (!problems.empty()) throw_first(problems, str(user, ": the module is not well formed: "));
}

}  // namespace aj
