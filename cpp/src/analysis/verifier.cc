// The verifier (analysis/verifier.h): one pass over each function that
// checks binding discipline, A-normal form, types against the op rules and
// attrs against the op schemas, collecting every problem with its place.
#include "adjoint/analysis/verifier.h"

#include <unordered_map>
#include <unordered_set>

#include "adjoint/op/registry.h"
#include "adjoint/support/error.h"

namespace aj {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(const std::string& name, const FunctionNode& fn, std::vector<std::string>& out)
      : name_(name), fn_(fn), out_(out) {}

  void run() {
    check_params();
    check_num_input();
    for (size_t i = 0; i < fn_.bindings().size(); ++i) check_binding(i, fn_.bindings()[i]);
    where_ = Place{"the return value"};
    check_operand(fn_.ret(), /*leaf_only=*/true);
  }

 private:
  // Where the verifier is, kept cheap and formatted only when a problem is found.
  struct Place {
    const char* what = "";  // "param", "binding", "the return value", "attr num_input"
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

  void define(const Var& v) {
    if (!v) {
      problem("a null var");
      return;
    }
    auto it = defined_.find(v.get());
    if (it != defined_.end()) {
      problem("var '", v->name_hint(), "' is bound twice (first at ", describe(it->second), ")");
      return;
    }
    defined_.emplace(v.get(), where_);
  }

  void check_params() {
    for (size_t i = 0; i < fn_.params().size(); ++i) {
      const Var& p = fn_.params()[i];
      where_ = Place{"param", i, p.get()};
      define(p);
    }
  }

  void check_num_input() {
    const AttrValue* v = fn_.attr("num_input");
    if (!v) return;
    where_ = Place{"attr num_input"};
    const int64_t* n = std::get_if<int64_t>(v);
    if (!n) problem("must be an int, got ", attr_to_string(*v));
    else if (*n < 0 || static_cast<size_t>(*n) > fn_.params().size())
      problem(*n, " is outside [0, ", fn_.params().size(), "], the param count");
  }

  // A var must be bound before use; with leaf_only, e must be a leaf.
  void check_operand(const Expr& e, bool leaf_only) {
    if (!e) {
      problem("a null expr");
      return;
    }
    switch (e->kind()) {
      case ExprKind::kVar:
        if (!defined_.count(static_cast<const VarNode*>(e.get())))
          problem("uses var '", static_cast<const VarNode&>(*e).name_hint(),
                  "', which is not bound before this point");
        return;
      case ExprKind::kConstant:
        return;
      case ExprKind::kTuple:
        for (const auto& f : static_cast<const TupleNode&>(*e).fields()) check_operand(f, true);
        return;
      default:
        if (leaf_only) problem("a nested ", expr_kind_name(e), " where A-normal form needs a var, constant or tuple");
    }
  }

  static const char* expr_kind_name(const Expr& e) {
    switch (e->kind()) {
      case ExprKind::kCall: return "call";
      case ExprKind::kTupleGetItem: return "tuple item";
      default: return "expr";
    }
  }

  void check_call(const CallNode& call) {
    const OpDef& op = call.op();
    for (const auto& a : call.args()) check_operand(a, true);
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

  void check_value(const Expr& value) {
    if (!value) {
      problem("a null value");
      return;
    }
    switch (value->kind()) {
      case ExprKind::kCall:
        check_call(static_cast<const CallNode&>(*value));
        return;
      case ExprKind::kTupleGetItem:
        check_operand(static_cast<const TupleGetItemNode&>(*value).tuple(), true);
        return;
      default:
        check_operand(value, true);
    }
  }

  void check_binding(size_t i, const Binding& b) {
    where_ = Place{"binding", i, b.var.get()};
    check_value(b.value);
    if (b.var && b.value && !type_equal(b.var->type(), b.value->type()))
      problem("var has type ", b.var->type()->to_string(), " but its value has type ",
              b.value->type()->to_string());
    define(b.var);
  }

  const std::string& name_;
  const FunctionNode& fn_;
  std::vector<std::string>& out_;
  Place where_;
  std::unordered_map<const VarNode*, Place> defined_;
};

}  // namespace

std::vector<std::string> verify_problems(const Module& mod) {
  std::vector<std::string> out;
  for (const auto& [name, fn] : mod->functions()) FunctionVerifier(name, *fn, out).run();
  return out;
}

bool well_formed(const Module& mod) { return verify_problems(mod).empty(); }

void verify(const Module& mod) {
  auto problems = verify_problems(mod);
  if (problems.empty()) return;
  std::string msg = problems[0];
  if (problems.size() > 1) msg += str(" (and ", problems.size() - 1, " more problem(s))");
  throw VerifyError(msg);
}

}  // namespace aj
