// The dataflow index (analysis/dataflow.h): definitions and the live
// numbering from VarIndexMaps; each binding's operands as def indices (CSR)
// from one forward walk, and users in CSR form from two passes over those
// (count, then fill); liveness from one backward sweep over a set of wanted
// var addresses; dependence from one forward pass per query.
#include "adjoint/analysis/dataflow.h"

#include "adjoint/ir/binding_walk.h"

namespace aj {
namespace {

DefKind kind_of(const Expr& value) {
  if (!value) return DefKind::kUndefined;
  switch (value->kind()) {
    case ExprKind::kCall: return DefKind::kCall;
    case ExprKind::kTuple: return DefKind::kTuple;
    case ExprKind::kTupleGetItem: return DefKind::kTupleGetItem;
    case ExprKind::kVar: return DefKind::kAlias;
    case ExprKind::kConstant: return DefKind::kConstant;
  }
  return DefKind::kUndefined;
}

// f(var) for each var the binding's value uses; none for a null value
// (malformed IR, only buildable from C++, that the verifier reports).
template <class F>
void for_each_use_in(const Binding& b, F&& f) {
  if (b.value) for_each_var_use(b.value, f);
}

// A set of var addresses: open addressing with linear probing and
// backward-shift deletion, so it stays as small as what it holds. Hashing
// the address reads nothing of the var.
class VarSet {
 public:
  VarSet() : slots_(16, nullptr) {}

  void insert(const VarNode* v) {
    size_t s = find(v);
    if (slots_[s]) return;
    slots_[s] = v;
    if (2 * ++size_ > slots_.size()) grow();
  }

  // Removes v; false when it was not there.
  bool erase(const VarNode* v) {
    size_t s = find(v);
    if (!slots_[s]) return false;
    slots_[s] = nullptr;
    --size_;
    for (size_t next = (s + 1) & mask(); slots_[next]; next = (next + 1) & mask()) {
      size_t home = slot(slots_[next]);
      // Move the entry back into the hole unless its home lies in (s, next].
      bool stays = s <= next ? (s < home && home <= next) : (s < home || home <= next);
      if (stays) continue;
      slots_[s] = slots_[next];
      slots_[next] = nullptr;
      s = next;
    }
    return true;
  }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t slot(const VarNode* v) const { return address_slot(v, shift_); }
  size_t find(const VarNode* v) const {
    size_t s = slot(v);
    while (slots_[s] && slots_[s] != v) s = (s + 1) & mask();
    return s;
  }
  void grow() {
    std::vector<const VarNode*> old(2 * slots_.size(), nullptr);
    old.swap(slots_);
    --shift_;
    size_ = 0;
    for (const VarNode* v : old)
      if (v) insert(v);
  }

  std::vector<const VarNode*> slots_;
  size_t size_ = 0;
  int shift_ = 60;  // 64 - log2(slot count)
};

}  // namespace

DataflowIndex::DataflowIndex(const FunctionNode& fn) : fn_(fn), num_params_(fn.params().size()) {}

// ---- definitions ----

const VarIndexMap& DataflowIndex::build_defs() const {
  defs_ = std::make_unique<VarIndexMap>(fn_);
  return *defs_;
}

DefKind DataflowIndex::def_kind(const VarNode* v) const {
  int64_t d = def_index(v);
  if (d < 0) return DefKind::kUndefined;
  if (static_cast<size_t>(d) < num_params_) return DefKind::kParam;
  return kind_of(fn_.bindings()[static_cast<size_t>(d) - num_params_].value);
}

int64_t DataflowIndex::param_index(const VarNode* v) const {
  int64_t d = def_index(v);
  return d >= 0 && static_cast<size_t>(d) < num_params_ ? d : -1;
}

int64_t DataflowIndex::binding_index(const VarNode* v) const {
  int64_t d = def_index(v);
  return d >= static_cast<int64_t>(num_params_) ? d - static_cast<int64_t>(num_params_) : -1;
}

const Expr* DataflowIndex::value(const VarNode* v) const {
  int64_t b = binding_index(v);
  return b < 0 ? nullptr : &fn_.bindings()[static_cast<size_t>(b)].value;
}

const CallNode* DataflowIndex::call(const VarNode* v) const {
  const Expr* e = value(v);
  return e ? as<CallNode>(*e) : nullptr;
}

const CallNode* DataflowIndex::call(const Expr& e) const {
  const VarNode* v = as<VarNode>(e);
  return v ? call(v) : nullptr;
}

// ---- operands by def index ----

// One forward walk: the def index of each var use, each value's kind and
// each var's type.
// A function has far fewer than 2^31 definitions (its nodes alone would
// take hundreds of gigabytes), so int32_t holds every index.
void DataflowIndex::build_operands() const {
  const VarIndexMap& index = defs();
  const auto& bindings = fn_.bindings();
  operand_start_.assign(1, 0);
  operand_start_.reserve(bindings.size() + 1);
  operand_defs_.clear();
  operand_defs_.reserve(2 * bindings.size());
  binding_kinds_.resize(bindings.size());
  binding_types_.resize(bindings.size());
  for_each_binding(bindings, [&](size_t b, const Binding& binding) {
    binding_kinds_[b] = kind_of(binding.value);
    binding_types_[b] = binding.var ? binding.var->type().get() : nullptr;
    for_each_use_in(binding, [&](const VarNode* v) { operand_defs_.push_back(static_cast<int32_t>(index(v))); });
    operand_start_.push_back(operand_defs_.size());
  });
  has_operands_ = true;
}

// ---- users ----

// Each binding is counted once per var it uses: a repeat within one value is
// skipped by remembering the last binding that counted the var.
void DataflowIndex::build_users() const {
  const VarIndexMap& index = defs();
  const size_t num_bindings = fn_.bindings().size();
  size_t n = num_defs();
  returned_.assign(n, 0);
  for_each_var_use(fn_.ret(), [&](const VarNode* v) {
    int64_t d = index(v);
    if (d >= 0) returned_[static_cast<size_t>(d)] = 1;
  });
  std::vector<int64_t> last(n, -1);
  auto for_each_distinct_use = [&](size_t b, auto&& f) {
    for (int32_t d : operand_defs(b)) {
      if (d < 0 || last[static_cast<size_t>(d)] == static_cast<int64_t>(b)) continue;
      last[static_cast<size_t>(d)] = static_cast<int64_t>(b);
      f(static_cast<size_t>(d));
    }
  };
  user_start_.assign(n + 1, 0);
  for (size_t b = 0; b < num_bindings; ++b) for_each_distinct_use(b, [&](size_t d) { ++user_start_[d + 1]; });
  for (size_t d = 0; d < n; ++d) user_start_[d + 1] += user_start_[d];
  users_.resize(static_cast<size_t>(user_start_.back()));
  std::vector<int64_t> fill(user_start_.begin(), user_start_.end() - 1);
  std::fill(last.begin(), last.end(), -1);
  for (size_t b = 0; b < num_bindings; ++b)
    for_each_distinct_use(b, [&](size_t d) { users_[static_cast<size_t>(fill[d]++)] = static_cast<int64_t>(b); });
  has_users_ = true;
}

std::vector<int64_t> DataflowIndex::users(const VarNode* v) const {
  int64_t d = def_index(v);
  if (d < 0) return {};
  if (!has_users_) build_users();
  auto begin = users_.begin() + user_start_[static_cast<size_t>(d)];
  auto end = users_.begin() + user_start_[static_cast<size_t>(d) + 1];
  return std::vector<int64_t>(begin, end);
}

bool DataflowIndex::used_by_return(const VarNode* v) const {
  int64_t d = def_index(v);
  if (d < 0) return false;
  if (!has_users_) build_users();
  return returned_[static_cast<size_t>(d)];
}

size_t DataflowIndex::num_users(const VarNode* v) const {
  int64_t d = def_index(v);
  if (d < 0) return 0;
  if (!has_users_) build_users();
  size_t n = static_cast<size_t>(user_start_[static_cast<size_t>(d) + 1] - user_start_[static_cast<size_t>(d)]);
  return n + returned_[static_cast<size_t>(d)];
}

// ---- liveness and dependence ----

// Walking the bindings backward, a binding is live when its var is wanted
// (used by the return or by a live binding after it); its var then stops
// being wanted (it is bound here) and the vars its value uses become
// wanted. The set holds only vars used after the current binding and bound
// before it, and a dead binding costs one lookup of its var's address.
void DataflowIndex::build_live() const {
  const auto& bindings = fn_.bindings();
  live_.assign(bindings.size(), 0);
  VarSet wanted;
  auto want = [&wanted](const VarNode* v) { wanted.insert(v); };
  for_each_var_use(fn_.ret(), want);
  for_each_binding_backward(bindings, [&](size_t b, const Binding& binding) {
    if (!wanted.erase(binding.var.get())) return;
    live_[b] = 1;
    for_each_use_in(binding, want);
  });
  has_live_ = true;
}

const std::vector<uint8_t>& DataflowIndex::live() const {
  if (!has_live_) build_live();
  return live_;
}

const VarIndexMap& DataflowIndex::live_defs() const {
  if (live_defs_) return *live_defs_;
  const std::vector<uint8_t>& is_live = live();
  std::vector<const VarNode*> vars;
  for (const auto& p : fn_.params()) vars.push_back(p.get());
  for (size_t b = 0; b < is_live.size(); ++b)
    if (is_live[b]) vars.push_back(fn_.bindings()[b].var.get());
  live_defs_ = std::make_unique<VarIndexMap>(vars);
  return *live_defs_;
}

int64_t DataflowIndex::live_index(const VarNode* v) const { return live_defs()(v); }

size_t DataflowIndex::num_live_defs() const { return live_defs().size(); }

// The params' marks, by def index, in a table of `size` entries.
std::vector<uint8_t> DataflowIndex::seeded_params(const VarPredicate& seed, size_t size) const {
  std::vector<uint8_t> marked(size, 0);
  for (size_t i = 0; i < num_params_; ++i) marked[i] = seed(fn_.params()[i].get());
  return marked;
}

// One forward walk over the operand arrays: a binding depends on the seeds
// when a var its value uses is a seed or depends on one.
std::vector<uint8_t> DataflowIndex::depends_on(const VarPredicate& seed) const {
  const auto& bindings = fn_.bindings();
  std::vector<uint8_t> marked = seeded_params(seed, num_defs()), out(bindings.size(), 0);
  for (size_t b = 0; b < bindings.size(); ++b) {
    bool dep = false;
    for (int32_t d : operand_defs(b)) dep = dep || (d >= 0 && marked[static_cast<size_t>(d)]);
    out[b] = dep;
    marked[num_params_ + b] = dep || seed(bindings[b].var.get());
  }
  return out;
}

// The same over the live bindings' nodes, numbered among the live: the live
// part of a mostly dead function is read, not the whole function indexed.
std::vector<uint8_t> DataflowIndex::live_depends_on(const VarPredicate& seed) const {
  const VarIndexMap& index = live_defs();
  const std::vector<uint8_t>& among = live();
  std::vector<uint8_t> marked = seeded_params(seed, index.size()), out(among.size(), 0);
  size_t next = num_params_;  // the live index of the next live binding
  for_each_binding(fn_.bindings(), [&](size_t b, const Binding& binding) {
    if (!among[b]) return;
    bool dep = false;
    for_each_use_in(binding, [&](const VarNode* v) {
      if (dep) return;
      int64_t d = index(v);
      dep = d >= 0 && marked[static_cast<size_t>(d)];
    });
    out[b] = dep;
    marked[next++] = dep || seed(binding.var.get());
  });
  return out;
}

}  // namespace aj
