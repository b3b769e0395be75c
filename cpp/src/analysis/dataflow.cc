// The dataflow index (analysis/dataflow.h): two walks over the bindings
// build the users in CSR form (count, then fill), one backward sweep the
// liveness.
#include "adjoint/analysis/dataflow.h"

namespace aj {
namespace {

DefKind kind_of(const Expr& value) {
  switch (value->kind()) {
    case ExprKind::kCall: return DefKind::kCall;
    case ExprKind::kTuple: return DefKind::kTuple;
    case ExprKind::kTupleGetItem: return DefKind::kTupleGetItem;
    case ExprKind::kVar: return DefKind::kAlias;
    case ExprKind::kConstant: return DefKind::kConstant;
  }
  return DefKind::kUndefined;
}

}  // namespace

DataflowIndex::DataflowIndex(const FunctionNode& fn)
    : fn_(fn), num_params_(fn.params().size()), index_(fn), kind_(index_.size(), DefKind::kUndefined),
      user_start_(index_.size() + 1, 0), returned_(index_.size(), 0), live_(fn.bindings().size(), 0) {
  const auto& bindings = fn.bindings();
  for (size_t i = 0; i < num_params_; ++i) kind_[i] = DefKind::kParam;
  for (size_t b = 0; b < bindings.size(); ++b) kind_[num_params_ + b] = kind_of(bindings[b].value);

  // Users: each binding counted once per var it uses (repeats skipped by
  // remembering the last binding that counted the var).
  std::vector<int64_t> last(index_.size(), -1);
  auto for_each_distinct_use = [&](size_t b, auto&& f) {
    for_each_var_use(bindings[b].value, [&](const VarNode* v) {
      int64_t s = slot(v);
      if (s < 0 || last[static_cast<size_t>(s)] == static_cast<int64_t>(b)) return;
      last[static_cast<size_t>(s)] = static_cast<int64_t>(b);
      f(static_cast<size_t>(s));
    });
  };
  for (size_t b = 0; b < bindings.size(); ++b) for_each_distinct_use(b, [&](size_t s) { ++user_start_[s + 1]; });
  for (size_t s = 0; s < index_.size(); ++s) user_start_[s + 1] += user_start_[s];
  users_.resize(static_cast<size_t>(user_start_.back()));
  std::vector<int64_t> fill(user_start_.begin(), user_start_.end() - 1);
  std::fill(last.begin(), last.end(), -1);
  for (size_t b = 0; b < bindings.size(); ++b)
    for_each_distinct_use(b, [&](size_t s) { users_[static_cast<size_t>(fill[s]++)] = static_cast<int64_t>(b); });

  for_each_var_use(fn.ret(), [&](const VarNode* v) {
    int64_t s = slot(v);
    if (s >= 0) returned_[static_cast<size_t>(s)] = 1;
  });

  // Liveness: a binding is live when the return or a live binding uses it.
  for (size_t b = bindings.size(); b-- > 0;) {
    size_t s = num_params_ + b;
    bool needed = returned_[s];
    for (int64_t u = user_start_[s]; !needed && u < user_start_[s + 1]; ++u) needed = live_[static_cast<size_t>(users_[static_cast<size_t>(u)])];
    live_[b] = needed;
  }
}

int64_t DataflowIndex::slot(const VarNode* v) const { return index_(v); }

DefKind DataflowIndex::def_kind(const VarNode* v) const {
  int64_t s = slot(v);
  return s < 0 ? DefKind::kUndefined : kind_[static_cast<size_t>(s)];
}

int64_t DataflowIndex::param_index(const VarNode* v) const {
  int64_t s = slot(v);
  return s >= 0 && static_cast<size_t>(s) < num_params_ ? s : -1;
}

int64_t DataflowIndex::binding_index(const VarNode* v) const {
  int64_t s = slot(v);
  return s >= static_cast<int64_t>(num_params_) ? s - static_cast<int64_t>(num_params_) : -1;
}

const Expr* DataflowIndex::value(const VarNode* v) const {
  int64_t b = binding_index(v);
  return b < 0 ? nullptr : &fn_.bindings()[static_cast<size_t>(b)].value;
}

const CallNode* DataflowIndex::call(const VarNode* v) const {
  const Expr* e = value(v);
  return e && (*e)->kind() == ExprKind::kCall ? static_cast<const CallNode*>(e->get()) : nullptr;
}

const CallNode* DataflowIndex::call(const Expr& e) const {
  return e->kind() == ExprKind::kVar ? call(static_cast<const VarNode*>(e.get())) : nullptr;
}

std::vector<int64_t> DataflowIndex::users(const VarNode* v) const {
  int64_t s = slot(v);
  if (s < 0) return {};
  auto begin = users_.begin() + user_start_[static_cast<size_t>(s)];
  auto end = users_.begin() + user_start_[static_cast<size_t>(s) + 1];
  return std::vector<int64_t>(begin, end);
}

bool DataflowIndex::used_by_return(const VarNode* v) const {
  int64_t s = slot(v);
  return s >= 0 && returned_[static_cast<size_t>(s)];
}

size_t DataflowIndex::num_users(const VarNode* v) const {
  int64_t s = slot(v);
  if (s < 0) return 0;
  size_t n = static_cast<size_t>(user_start_[static_cast<size_t>(s) + 1] - user_start_[static_cast<size_t>(s)]);
  return n + returned_[static_cast<size_t>(s)];
}

std::vector<uint8_t> DataflowIndex::depends_on(const std::function<bool(const VarNode*)>& seed) const {
  const auto& bindings = fn_.bindings();
  std::vector<uint8_t> marked(index_.size(), 0), out(bindings.size(), 0);
  for (size_t i = 0; i < num_params_; ++i) marked[i] = seed(fn_.params()[i].get());
  for (size_t b = 0; b < bindings.size(); ++b) {
    bool dep = false;
    for_each_var_use(bindings[b].value, [&](const VarNode* v) {
      int64_t s = slot(v);
      dep = dep || (s >= 0 && marked[static_cast<size_t>(s)]);
    });
    out[b] = dep;
    marked[num_params_ + b] = dep || seed(bindings[b].var.get());
  }
  return out;
}

std::vector<uint8_t> DataflowIndex::depends_only_on(const std::function<bool(const VarNode*)>& allowed) const {
  const auto& bindings = fn_.bindings();
  std::vector<uint8_t> ok(index_.size(), 0), out(bindings.size(), 0);
  for (size_t i = 0; i < num_params_; ++i) ok[i] = allowed(fn_.params()[i].get());
  for (size_t b = 0; b < bindings.size(); ++b) {
    bool all = true;
    for_each_var_use(bindings[b].value, [&](const VarNode* v) {
      int64_t s = slot(v);
      all = all && s >= 0 && ok[static_cast<size_t>(s)];
    });
    out[b] = all;
    ok[num_params_ + b] = all;
  }
  return out;
}

}  // namespace aj
