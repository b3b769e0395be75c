// parse_module: the text format (DESIGN.md §3, canonical form in printer.h)
// to a Module, in two phases per statement. The first (syntax.cc, grammar in
// syntax.h) reads a statement into a syntax tree; the second, here, builds
// its IR through a FunctionBuilder: it resolves vars in scope, makes calls
// (attrs resolved, types inferred by the op rules), checks annotations, and
// binds nested exprs first under generated names that avoid every name the
// function binds, before or after (the rest of the body is then read ahead).
//
// Every error is located: ParseError for syntax and names, TypeInferenceError
// for what the op rules, attrs or annotations reject (see lexer.h for the
// message format). Empty text (or only comments) is an empty module.
#include "adjoint/ir/parser.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "adjoint/ir/builder.h"
#include "adjoint/op/registry.h"
#include "literals.h"
#include "syntax.h"

namespace aj {
namespace {

using text::Node;
using text::NodeKind;
using text::Source;

// The vars in scope of one function, by name (views into the text), in an
// open-addressing table that doubles as it fills. A def's var is null while
// its value is being built; a Def* stays valid until the next insert.
class Scope {
 public:
  struct Def {
    Var var;
    size_t off;  // where it is bound
  };

  Scope() { slots_.assign(64, Slot{0, 0}); }

  Def* find(std::string_view name) {
    Slot* s = probe(name, std::hash<std::string_view>()(name));
    return s->index ? &defs_[s->index - 1].second : nullptr;
  }

  // The def of `name`, added when absent; false when it was already there.
  std::pair<Def*, bool> insert(std::string_view name, size_t off) {
    if (2 * (defs_.size() + 1) > slots_.size()) grow();
    size_t h = std::hash<std::string_view>()(name);
    Slot* s = probe(name, h);
    if (s->index) return {&defs_[s->index - 1].second, false};
    defs_.push_back({name, Def{nullptr, off}});
    *s = Slot{static_cast<uint32_t>(h), static_cast<uint32_t>(defs_.size())};
    return {&defs_.back().second, true};
  }

 private:
  struct Slot {
    uint32_t hash;
    uint32_t index;  // 1 + index into defs_, 0 when empty
  };

  Slot* probe(std::string_view name, size_t h) {
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!s.index) return &s;
      if (s.hash == static_cast<uint32_t>(h) && defs_[s.index - 1].first == name) return &s;
    }
  }

  void grow() {
    std::vector<Slot> old(2 * slots_.size(), Slot{0, 0});
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (!s.index) continue;
      size_t i = s.hash & mask;  // the stored hash holds the low bits the mask needs
      while (slots_[i].index) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::pair<std::string_view, Def>> defs_;
};

class FunctionLowering {
 public:
  // Consumes fn's binding values (each freed once lowered, while still in cache).
  FunctionLowering(const Source& src, text::SyntaxParser& parser, text::FunctionSyntax& fn,
                   const std::unordered_map<std::string_view, size_t>& functions)
      : src_(src), parser_(parser), fn_(fn), functions_(functions),
        builder_(fn.attrs, /*unique_names=*/false) {}

  Function run();

 private:
  bool next_binding(text::BindingSyntax& b);
  void read_ahead();
  std::string fresh_name();
  Expr operand(const Node& n);
  Expr value(const Node& n);
  Expr lookup(const Node& n);
  // A call's items sorted out by its op's schema.
  struct CallItems {
    std::vector<const Node*> args;  // by arg index
    std::vector<AttrValue> positional;
    std::vector<std::pair<std::string, AttrValue>> keywords;
  };

  const OpDef& find_op(const Node& n) const;
  Expr call(const Node& n);
  CallItems sort_items(const OpDef& op, const Node& n);
  Expr tuple_item(const Node& n);
  AttrValue attr(const OpDef& op, const AttrSpec& spec, const Node& n, bool positional);
  Expr tensor_arg(const OpDef& op, size_t i, const Node& n);
  [[noreturn]] void rethrow_at(size_t off, const std::exception& e) const;

  const Source& src_;
  text::SyntaxParser& parser_;
  text::FunctionSyntax& fn_;
  const std::unordered_map<std::string_view, size_t>& functions_;  // defined so far
  FunctionBuilder builder_;
  Scope scope_;
  bool body_read_ = false;                   // the parser has read the return
  std::vector<text::BindingSyntax> ahead_;   // read ahead, not yet lowered
  size_t next_ahead_ = 0;
  std::unordered_set<std::string_view> ahead_names_;
  size_t next_name_ = 0;
};

Function FunctionLowering::run() {
  for (const auto& p : fn_.params) {
    auto [def, fresh] = scope_.insert(p.name, p.off);
    if (!fresh) src_.fail(p.off, str("duplicate param '", p.name, "'"));
    def->var = builder_.add_param(std::string(p.name), p.type);
  }
  text::BindingSyntax b;
  while (next_binding(b)) {
    auto [def, fresh] = scope_.insert(b.name, b.off);
    if (!fresh)
      src_.fail(b.off, str("var '", b.name, "' is already bound (line ", src_.line_of(def->off),
                           "); each var is bound once"));
    Expr v = value(b.value);
    if (b.annotation && !type_equal(b.annotation, v->type()))
      src_.fail<TypeInferenceError>(
          b.annotation_off, str("var '", b.name, "' is annotated ", b.annotation->to_string(),
                                " but its value has type ", v->type()->to_string()));
    def->var = builder_.emit_named(v, std::string(b.name));
  }
  Expr ret = operand(fn_.ret);
  if (fn_.ret_type && !type_equal(fn_.ret_type, ret->type()))
    src_.fail<TypeInferenceError>(fn_.ret_off, str("function '", fn_.name, "' is annotated -> ",
                                                   fn_.ret_type->to_string(), " but returns ",
                                                   ret->type()->to_string()));
  return builder_.finish(ret);
}

// The next binding of the body, from what was read ahead or else from the
// parser; false after the last (the return has then been read).
bool FunctionLowering::next_binding(text::BindingSyntax& b) {
  if (next_ahead_ < ahead_.size()) {
    b = std::move(ahead_[next_ahead_++]);
    return true;
  }
  if (body_read_) return false;
  body_read_ = !parser_.statement(fn_, b);
  return !body_read_;
}

// Reads the rest of the body, for the names it binds.
void FunctionLowering::read_ahead() {
  while (!body_read_) {
    text::BindingSyntax b;
    body_read_ = !parser_.statement(fn_, b);
    if (body_read_) break;
    ahead_names_.insert(b.name);
    ahead_.push_back(std::move(b));
  }
}

// A name for the binding of a nested expr: lv, lv_1, lv_2, ..., skipping
// every name the function binds anywhere (what is in scope, and the rest of
// the body, read ahead on first use), so a generated name never collides
// with one bound later. Generating names here rather than through the
// builder's de-duplication keeps each one O(1).
std::string FunctionLowering::fresh_name() {
  read_ahead();
  for (;;) {
    std::string name = next_name_ == 0 ? std::string("lv") : str("lv_", next_name_);
    ++next_name_;
    if (!scope_.find(name) && !ahead_names_.count(name)) return name;
  }
}

// An expr where A-normal form wants a leaf (call args, tuple fields, the
// tuple of an item, the returned expr): anything else is bound first.
Expr FunctionLowering::operand(const Node& n) {
  Expr e = value(n);
  return is_leaf(e) ? e : builder_.emit_named(e, fresh_name());
}

// An expr in value position: a var, call, constant, tuple (or list) or item,
// its operands made leaves.
Expr FunctionLowering::value(const Node& n) {
  switch (n.kind) {
    case NodeKind::kName: return lookup(n);
    case NodeKind::kCall: return call(n);
    case NodeKind::kConst: return n.constant;
    case NodeKind::kIndex: return tuple_item(n);
    case NodeKind::kTuple:
    case NodeKind::kList: {
      std::vector<Expr> fields;
      fields.reserve(n.items.size());
      for (const Node& item : n.items) fields.push_back(operand(item));
      try {
        return std::make_shared<TupleNode>(std::move(fields));
      } catch (const std::exception& e) {
        rethrow_at(n.off, e);
      }
    }
    default:
      break;
  }
  std::string shown = n.kind == NodeKind::kString ? "\"" + text::escape(n.text) + "\""
                                                  : str(n.negative ? "-" : "", n.text);
  if (n.kind == NodeKind::kBool) shown = n.truth ? "True" : "False";
  if (n.kind == NodeKind::kNone) shown = "None";
  src_.fail(n.off, str("the literal ", shown,
                       " is not a value here; a constant is written const(1.0, \"float32\")"));
}

Expr FunctionLowering::lookup(const Node& n) {
  Scope::Def* def = scope_.find(n.text);
  if (def && def->var) return def->var;
  if (def) src_.fail(n.off, str("var '", n.text, "' is used in its own binding"));
  read_ahead();
  for (const auto& b : ahead_)
    if (b.name == n.text)
      src_.fail(n.off, str("var '", n.text, "' is used before its binding (line ",
                           src_.line_of(b.off), ")"));
  src_.fail(n.off, str("undefined var '", n.text, "'"));
}

// t[i]; a negative i in range counts from the end, one out of range is
// left as written so the error names it.
Expr FunctionLowering::tuple_item(const Node& n) {
  Expr tuple = operand(n.items[0]);
  int64_t index = n.index;
  const Type& t = tuple->type();
  int64_t size = t->is_tuple() ? static_cast<int64_t>(t->fields().size()) : 0;
  if (index < 0 && index >= -size) index += size;
  try {
    return std::make_shared<TupleGetItemNode>(tuple, index);
  } catch (const std::exception& e) {
    rethrow_at(n.off, e);
  }
}

const OpDef& FunctionLowering::find_op(const Node& n) const {
  std::string name(n.text);
  if (const OpDef* op = OpRegistry::global().find(name)) return *op;
  std::string hint = functions_.count(n.text) ? " (functions of a module cannot be called)"
                                              : OpRegistry::global().unknown_op_hint(name);
  src_.fail(n.off, str("unknown op '", n.text, "'", hint));
}

// op(args..., attrs...): its tensor args by position or name, its attrs
// positional (in schema order, after the args) or keywords.
Expr FunctionLowering::call(const Node& n) {
  const OpDef& op = find_op(n);
  CallItems items = sort_items(op, n);
  std::vector<Expr> args;
  args.reserve(items.args.size());
  for (size_t i = 0; i < items.args.size(); ++i) args.push_back(tensor_arg(op, i, *items.args[i]));
  try {
    return make_call(op, std::move(args), resolve_attrs(op, items.positional, items.keywords));
  } catch (const std::exception& e) {
    rethrow_at(n.off, e);
  }
}

FunctionLowering::CallItems FunctionLowering::sort_items(const OpDef& op, const Node& n) {
  size_t num_args = op.arg_names.size();
  size_t positional = 0;
  for (const Node& item : n.items) positional += item.key.empty();
  if (positional > num_args + op.attrs.size()) {
    std::string attrs = op.attrs.empty() ? "" : str(" and ", op.attrs.size(), " attr(s)");
    src_.fail<TypeInferenceError>(n.off, str("op '", op.name, "' takes ", num_args, " argument(s)",
                                             attrs, ", got ", positional));
  }
  CallItems out;
  out.args.assign(num_args, nullptr);
  size_t next = 0;
  for (const Node& item : n.items) {
    if (item.key.empty()) {
      size_t i = next++;
      if (i < num_args) out.args[i] = &item;
      else out.positional.push_back(attr(op, op.attrs[i - num_args], item, true));
      continue;
    }
    auto arg = std::find(op.arg_names.begin(), op.arg_names.end(), item.key);
    if (arg != op.arg_names.end()) {
      const Node*& slot = out.args[arg - op.arg_names.begin()];
      if (slot)
        src_.fail<TypeInferenceError>(
            item.key_off, str("op '", op.name, "': argument '", item.key, "' given twice"));
      slot = &item;
      continue;
    }
    int a = op.attr_index(std::string(item.key));
    if (a < 0) {
      std::string known;
      for (const auto& spec : op.attrs) known += (known.empty() ? "" : ", ") + spec.name;
      known = known.empty() ? " (it takes none)" : " (it takes: " + known + ")";
      src_.fail<TypeInferenceError>(
          item.key_off, str("op '", op.name, "' has no attr '", item.key, "'", known));
    }
    out.keywords.emplace_back(std::string(item.key), attr(op, op.attrs[a], item, false));
  }
  for (size_t i = 0; i < num_args; ++i)
    if (!out.args[i])
      src_.fail<TypeInferenceError>(n.off, str("op '", op.name, "' takes ", num_args,
                                               " argument(s), got ", positional, " (missing '",
                                               op.arg_names[i], "')"));
  return out;
}

Expr FunctionLowering::tensor_arg(const OpDef& op, size_t i, const Node& n) {
  if (n.is_literal())
    src_.fail<TypeInferenceError>(n.off, str("op '", op.name, "': argument '", op.arg_names[i],
                                             "' must be a tensor, got a literal (a constant is "
                                             "written const(1.0, \"float32\"))"));
  return operand(n);
}

// An attr's literal, checked against its spec where it is written.
AttrValue FunctionLowering::attr(const OpDef& op, const AttrSpec& spec, const Node& n,
                                 bool positional) {
  size_t where = positional ? n.off : n.key_off;
  if ((n.kind == NodeKind::kName && !n.is_float_name()) || n.kind == NodeKind::kCall ||
      n.kind == NodeKind::kConst || n.kind == NodeKind::kIndex) {
    std::string extra = positional ? str("; '", op.name, "' takes ", op.arg_names.size(),
                                         " tensor argument(s)")
                                   : "";
    src_.fail<TypeInferenceError>(n.off, str("op '", op.name, "': attr '", spec.name,
                                             "' must be a literal, got an expression", extra));
  }
  AttrValue raw = text::attr_value(src_, n);
  bool dtype_kind = spec.kind == AttrKind::kDType || spec.kind == AttrKind::kOptDType;
  if (dtype_kind && std::holds_alternative<std::string>(raw)) text::dtype_from_node(src_, n);
  try {
    return coerce_attr(op, spec, raw);
  } catch (const std::exception& e) {
    rethrow_at(where, e);
  }
}

// Errors from the IR's constructors and op rules carry no location: add it.
void FunctionLowering::rethrow_at(size_t off, const std::exception& e) const {
  src_.fail<TypeInferenceError>(off, e.what());
}

Module parse_text(const Source& src) {
  text::SyntaxParser parser(src);
  std::vector<std::pair<std::string, Function>> functions;
  std::unordered_map<std::string_view, size_t> defined;  // name -> where
  while (!parser.at_end()) {
    text::FunctionSyntax fn = parser.header();
    auto [it, fresh] = defined.emplace(fn.name, fn.off);
    if (!fresh)
      src.fail(fn.off, str("function '", fn.name, "' is already defined (line ",
                           src.line_of(it->second), ")"));
    functions.emplace_back(std::string(fn.name), FunctionLowering(src, parser, fn, defined).run());
  }
  return std::make_shared<ModuleNode>(std::move(functions));
}

}  // namespace

Module parse_module(const std::string& text) {
  Source src(text);
  try {
    return parse_text(src);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw ParseError(str("internal error while parsing: ", text::escape(e.what())));
  }
}

}  // namespace aj
