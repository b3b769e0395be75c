// Functions and modules: construction (a module's function names are names
// the parser reads), attrs, lookup.
#include "adjoint/ir/function.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "adjoint/ir/binding_walk.h"
#include "adjoint/ir/names.h"
#include "adjoint/support/error.h"

namespace aj {

const std::vector<std::string>& known_func_attrs() {
  static const std::vector<std::string> names = {"num_input", "frozen", "doc"};
  return names;
}

bool is_known_func_attr(std::string_view name) {
  for (const auto& k : known_func_attrs())
    if (k == name) return true;
  return false;
}

std::string func_attr_problem(const std::string& name, const AttrValue& value) {
  if (name == "num_input") {
    if (!std::holds_alternative<int64_t>(value)) return str("function attr num_input must be an int, got ", attr_to_string(value));
    return "";
  }
  if (name == "frozen") {
    if (!std::holds_alternative<std::string>(value))
      return str("function attr frozen must be a string of param names, got ", attr_to_string(value));
    return "";
  }
  if (name == "doc") {
    if (!std::holds_alternative<std::string>(value)) return str("function attr doc must be a string, got ", attr_to_string(value));
    return "";
  }
  std::string known;
  for (const auto& k : known_func_attrs()) known += (known.empty() ? "" : ", ") + k;
  return str("unknown function attr '", name, "' (known: ", known, ")");
}

std::vector<std::string> split_frozen_names(const std::string& text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  auto trimmed = [&](size_t begin, size_t end) {
    while (begin < end && blank(text[begin])) ++begin;
    while (end > begin && blank(text[end - 1])) --end;
    return text.substr(begin, end - begin);
  };
  std::vector<std::string> names;
  if (trimmed(0, text.size()).empty()) return names;
  for (size_t start = 0;;) {
    size_t comma = std::min(text.find(',', start), text.size());
    names.push_back(trimmed(start, comma));
    if (comma == text.size()) return names;
    start = comma + 1;
  }
}

std::string frozen_attr_problem(const std::string& text, const std::vector<std::string_view>& params,
                                int64_t num_input) {
  std::vector<std::string> names = split_frozen_names(text);
  if (names.empty()) return "";
  if (num_input < 0) return "names weights, but the function has no num_input to tell its weights from its inputs";
  const size_t first_weight = std::min(static_cast<size_t>(num_input), params.size());
  // Per param name: how many params have it, and the position of one.
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> by_name;
  by_name.reserve(params.size());
  for (size_t p = 0; p < params.size(); ++p) {
    auto& [count, at] = by_name[params[p]];
    ++count;
    at = p;
  }
  std::unordered_set<std::string_view> listed;
  for (const std::string& name : names) {
    if (name.empty())
      return str("lists an empty name in ", attr_to_string(AttrValue(text)), " (names are separated by single commas)");
    if (!listed.insert(name).second) return str("lists '", name, "' twice");
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      constexpr size_t kShown = 20;
      std::string weights;
      for (size_t w = first_weight; w < params.size() && w < first_weight + kShown; ++w)
        weights += (weights.empty() ? "" : ", ") + std::string(params[w]);
      if (params.size() - first_weight > kShown) weights += str(" and ", params.size() - first_weight - kShown, " more");
      return str("lists '", name, "', which is not a param (its weights: ", weights.empty() ? "none" : weights, ")");
    }
    const auto [count, at] = it->second;
    if (count > 1) return str("lists '", name, "', which ", count, " params are named: a frozen name must be one param's");
    if (at < first_weight)
      return str("lists '", name, "', which is an input (param ", at, "; num_input=", num_input,
                 "), not a weight: only weights can be frozen");
  }
  return "";
}

namespace {

// Where attr `name` goes: the known attrs first, in known_func_attrs()
// order, then any other (only a malformed function has one).
size_t attr_rank(const std::string& name) {
  const auto& known = known_func_attrs();
  return static_cast<size_t>(std::find(known.begin(), known.end(), name) - known.begin());
}

// The attrs in canonical order: by rank, others by name.
FuncAttrs canonical_order(FuncAttrs attrs) {
  std::stable_sort(attrs.begin(), attrs.end(), [](const auto& a, const auto& b) {
    size_t ra = attr_rank(a.first), rb = attr_rank(b.first);
    return ra != rb ? ra < rb : a.first < b.first;
  });
  return attrs;
}

}  // namespace

FunctionNode::FunctionNode(std::vector<Var> params, std::vector<Binding> bindings, Expr ret,
                           FuncAttrs attrs)
    : params_(std::move(params)), bindings_(std::move(bindings)), ret_(std::move(ret)),
      attrs_(canonical_order(std::move(attrs))) {
  if (!ret_) throw Error("a function needs a returned expr");
}

// Releases the bindings in order with their nodes fetched ahead
// (ir/binding_walk.h): a large function's nodes are out of cache, and each
// release writes its node's reference count.
FunctionNode::~FunctionNode() {
  for (size_t i = 0; i < bindings_.size(); ++i) {
    if (i + walk_detail::kNodesAhead < bindings_.size()) walk_detail::fetch_nodes(bindings_[i + walk_detail::kNodesAhead]);
    bindings_[i] = Binding{};
  }
}

std::vector<Binding>* FunctionNode::sole_bindings(Function& fn) {
  if (!fn || fn.use_count() != 1) return nullptr;
  return &const_cast<FunctionNode&>(*fn).bindings_;
}

const AttrValue* FunctionNode::attr(const std::string& name) const {
  for (const auto& kv : attrs_)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

std::vector<std::string> FunctionNode::frozen_names() const {
  const AttrValue* v = attr("frozen");
  const auto* text = v ? std::get_if<std::string>(v) : nullptr;
  return text ? split_frozen_names(*text) : std::vector<std::string>{};
}

size_t FunctionNode::num_input() const {
  const AttrValue* v = attr("num_input");
  if (v) {
    if (const int64_t* n = std::get_if<int64_t>(v)) {
      if (*n >= 0 && static_cast<size_t>(*n) <= params_.size()) return static_cast<size_t>(*n);
    }
  }
  return params_.size();
}

Function FunctionNode::with_attr(const std::string& name, AttrValue value) const {
  FuncAttrs attrs = attrs_;
  bool found = false;
  for (auto& kv : attrs)
    if (kv.first == name) {
      kv.second = value;
      found = true;
    }
  if (!found) attrs.emplace_back(name, std::move(value));
  return std::make_shared<FunctionNode>(params_, bindings_, ret_, std::move(attrs));
}

ModuleNode::ModuleNode(std::vector<std::pair<std::string, Function>> functions)
    : functions_(std::move(functions)) {
  for (size_t i = 0; i < functions_.size(); ++i) {
    if (!functions_[i].second) throw Error(str("function '", functions_[i].first, "' is null"));
    if (std::string problem = function_name_problem(functions_[i].first); !problem.empty()) throw Error(problem);
    if (!index_.emplace(functions_[i].first, i).second)
      throw Error(str("module defines function '", functions_[i].first, "' twice"));
  }
}

Function ModuleNode::lookup(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : functions_[it->second].second;
}

Module ModuleNode::with_function(const std::string& name, Function fn) const {
  auto fns = functions_;
  auto it = index_.find(name);
  if (it != index_.end()) fns[it->second].second = std::move(fn);
  else fns.emplace_back(name, std::move(fn));
  return std::make_shared<ModuleNode>(std::move(fns));
}

}  // namespace aj
