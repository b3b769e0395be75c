// The CPU executor (runtime/executor.h): planning a function into
// instructions over slots, validating inputs, and running the plan.
#include "adjoint/runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <unordered_map>

#include "adjoint/op/manipulate.h"
#include "buffer_pool.h"

namespace aj {
namespace {

// The flattened tensor slots of a value (one for a tensor, one per field,
// recursively, for a tuple).
using SlotList = std::vector<int>;

size_t count_tensors(const Type& t) {
  if (t->is_tensor()) return 1;
  size_t n = 0;
  for (const auto& f : t->fields()) n += count_tensors(f);
  return n;
}

void flatten_types(const Type& t, std::vector<Type>& out) {
  if (t->is_tensor()) {
    out.push_back(t);
    return;
  }
  for (const auto& f : t->fields()) flatten_types(f, out);
}

// permute_dims that swaps exactly the last two axes: a transpose a matmul
// consumer can take as a GEMM flag.
bool swaps_last_two(const CallNode& call) { return is_transpose(&call); }

// Vars used only as matmul operands (so a transpose feeding them can fold).
std::unordered_map<const VarNode*, bool> matmul_only_uses(const FunctionNode& fn) {
  std::unordered_map<const VarNode*, bool> only;
  auto note = [&only](const Expr& e, bool is_matmul_operand) {
    if (auto* v = as<VarNode>(e)) {
      auto it = only.find(v);
      if (it == only.end()) only.emplace(v, is_matmul_operand);
      else it->second = it->second && is_matmul_operand;
    }
  };
  std::function<void(const Expr&)> note_other = [&](const Expr& e) {
    note(e, false);
    if (auto* t = as<TupleNode>(e))
      for (const auto& f : t->fields()) note_other(f);
  };
  for (const auto& b : fn.bindings()) {
    if (auto* c = as<CallNode>(b.value)) {
      bool mm = c->op() == ops::matmul;
      for (const auto& a : c->args()) {
        if (mm) note(a, true);
        else note_other(a);
      }
    } else if (auto* g = as<TupleGetItemNode>(b.value)) {
      note_other(g->tuple());
    } else {
      note_other(b.value);
    }
  }
  note_other(fn.ret());
  return only;
}

}  // namespace

CompiledFunction::CompiledFunction(std::string name, Function fn)
    : name_(std::move(name)), fn_(std::move(fn)), pool_(std::make_unique<BufferPool>()) {
  plan();
}

CompiledFunction::~CompiledFunction() = default;

int CompiledFunction::new_slot() {
  slots_.emplace_back();
  pooled_.push_back(false);
  return static_cast<int>(slots_.size() - 1);
}

void CompiledFunction::plan() {
  const FunctionNode& fn = *fn_;
  std::unordered_map<const ExprNode*, SlotList> refs;  // var or constant -> slots
  std::unordered_map<const VarNode*, int> transposed_source;  // folded transposes
  auto only_matmul = matmul_only_uses(fn);

  std::function<SlotList(const Expr&)> slots_of = [&](const Expr& e) -> SlotList {
    if (auto* c = as<ConstantNode>(e)) {
      auto it = refs.find(c);
      if (it != refs.end()) return it->second;
      int s = new_slot();
      slots_[s] = c->data();
      return refs[c] = {s};
    }
    if (auto* t = as<TupleNode>(e)) {
      SlotList out;
      for (const auto& f : t->fields()) {
        SlotList fs = slots_of(f);
        out.insert(out.end(), fs.begin(), fs.end());
      }
      return out;
    }
    auto it = refs.find(e.get());
    if (it == refs.end())
      throw ExecutionError(str("function '", name_, "' is not well formed: a var is used before it is bound"));
    return it->second;
  };

  for (size_t i = 0; i < fn.params().size(); ++i) {
    const Var& p = fn.params()[i];
    if (!p->type()->is_tensor())
      throw ExecutionError(str("function '", name_, "', param '", p->name_hint(),
                               "': the executor takes tensor params only, got ", p->type()->to_string()));
    int s = new_slot();
    param_slots_.push_back(s);
    refs[p.get()] = {s};
  }

  std::vector<std::vector<int>> instr_inputs;
  for (const auto& b : fn.bindings()) {
    const Expr& v = b.value;
    if (auto* g = as<TupleGetItemNode>(v)) {
      SlotList whole = slots_of(g->tuple());
      const auto& fields = g->tuple()->type()->fields();
      size_t start = 0;
      for (int k = 0; k < g->index(); ++k) start += count_tensors(fields[k]);
      size_t len = count_tensors(fields[g->index()]);
      refs[b.var.get()] = SlotList(whole.begin() + start, whole.begin() + start + len);
      continue;
    }
    auto* call = as<CallNode>(v);
    if (!call) {
      refs[b.var.get()] = slots_of(v);
      continue;
    }
    if (swaps_last_two(*call) && only_matmul.count(b.var.get()) && only_matmul[b.var.get()]) {
      transposed_source[b.var.get()] = slots_of(call->args()[0])[0];
      refs[b.var.get()] = slots_of(call->args()[0]);
      ++folded_transposes_;
      continue;
    }
    const OpDef& op = call->op();
    if (!op.kernel)
      throw ExecutionError(str("function '", name_, "', binding '", b.var->name_hint(), "': op '", op.name,
                               "' has no CPU kernel"));
    Instr ins{&op.kernel, KernelContext{}, {}, {}, {}, {}, {}};
    ins.ctx.call = call;
    ins.var = b.var.get();
    for (size_t a = 0; a < call->args().size(); ++a) {
      const Expr& arg = call->args()[a];
      auto* av = as<VarNode>(arg);
      if (av && transposed_source.count(av)) {
        ins.in_slots.push_back(transposed_source[av]);
        if (a < 2) ins.ctx.transposed[a] = true;
        continue;
      }
      SlotList s = slots_of(arg);
      ins.in_slots.insert(ins.in_slots.end(), s.begin(), s.end());
    }
    flatten_types(call->type(), ins.out_types);
    SlotList outs;
    for (const auto& t : ins.out_types) {
      int s = new_slot();
      pooled_[s] = true;
      outs.push_back(s);
      bool is_static = true;
      std::vector<int64_t> shape;
      for (const auto& d : t->shape()) {
        if (!d.is_const()) is_static = false;
        else shape.push_back(d.value());
      }
      ins.out_shapes.push_back(is_static ? shape : std::vector<int64_t>{});
    }
    ins.out_slots = outs;
    refs[b.var.get()] = outs;
    instrs_.push_back(std::move(ins));
  }
  ret_slots_ = slots_of(fn.ret());

  // Liveness: release each pooled slot after its last reader (or its producer
  // when nothing reads it); returned slots live on.
  std::vector<int> last(slots_.size(), -1);
  for (size_t i = 0; i < instrs_.size(); ++i) {
    for (int s : instrs_[i].out_slots) last[s] = static_cast<int>(i);
    for (int s : instrs_[i].in_slots) last[s] = static_cast<int>(i);
  }
  for (int s : ret_slots_) last[s] = -2;
  for (size_t i = 0; i < instrs_.size(); ++i) choose_inplace(instrs_[i], static_cast<int>(i), last);
  for (size_t s = 0; s < slots_.size(); ++s)
    if (pooled_[s] && last[s] >= 0) instrs_[last[s]].release_after.push_back(static_cast<int>(s));

  for (auto& ins : instrs_) {
    for (int s : ins.in_slots) ins.ctx.inputs.push_back(&slots_[s]);
    for (int s : ins.out_slots) ins.ctx.outputs.push_back(&slots_[s]);
  }
}

// An elementwise op may write over an input that dies here, when that input
// has the output's type and its buffer is the executor's (not an input or a
// constant); a view op (reshape) takes such an input's buffer as it is and
// runs no kernel. The input then leaves the release list: the output owns it.
void CompiledFunction::choose_inplace(Instr& ins, int index, std::vector<int>& last) {
  const OpDef& op = ins.ctx.call->op();
  if ((!op.inplace_ok && !op.is_view) || ins.out_slots.size() != 1) return;
  const Type& out_type = ins.out_types[0];
  const auto& args = ins.ctx.call->args();
  for (size_t a = 0; a < ins.in_slots.size() && a < args.size(); ++a) {
    int s = ins.in_slots[a];
    if (!pooled_[s] || last[s] != index) continue;
    const Type& in_type = args[a]->type();
    bool fits = op.is_view ? in_type->is_tensor() && in_type->dtype() == out_type->dtype()
                           : type_equal(in_type, out_type);
    if (!fits) continue;
    ins.inplace_from = s;
    ins.skip_kernel = op.is_view;
    last[s] = -3;  // handed to the output, never released on its own
    return;
  }
}

std::map<std::string, int64_t> CompiledFunction::bind_symbols(const std::vector<NDArray>& inputs) const {
  const auto& params = fn_->params();
  if (inputs.size() != params.size()) {
    std::string names;
    for (const auto& p : params) names += (names.empty() ? "" : ", ") + p->name_hint();
    throw ExecutionError(str("function '", name_, "' takes ", params.size(), " input(s) (", names, "), got ",
                             inputs.size()));
  }
  std::map<std::string, int64_t> env;
  std::map<std::string, std::string> bound_by;
  auto where = [&](size_t i) { return str("function '", name_, "', param '", params[i]->name_hint(), "' (#", i, ")"); };
  for (size_t i = 0; i < params.size(); ++i) {
    const TypeNode& t = *params[i]->type();
    const NDArray& a = inputs[i];
    if (a.dtype() != t.dtype())
      throw ExecutionError(str(where(i), ": expected dtype ", dtype_name(t.dtype()), ", got ", dtype_name(a.dtype())));
    if (a.shape().size() != t.ndim())
      throw ExecutionError(str(where(i), ": expected rank ", t.ndim(), " (shape ", shape_to_string(t.shape()),
                               "), got shape ", shape_to_string(Shape(a.shape().begin(), a.shape().end()))));
    for (size_t d = 0; d < t.ndim(); ++d) {
      const Dim& dim = t.shape()[d];
      int64_t got = a.shape()[d];
      if (dim.is_const()) {
        if (dim.value() != got)
          throw ExecutionError(str(where(i), ": dim ", d, " must be ", dim.value(), ", got ", got));
        continue;
      }
      auto terms = dim.terms();
      if (terms.size() == 1 && terms[0].coeff == 1 && terms[0].monomial.size() == 1 && terms[0].monomial[0].second == 1) {
        const std::string& sym = terms[0].monomial[0].first;
        auto it = env.find(sym);
        if (it == env.end()) {
          env[sym] = got;
          bound_by[sym] = str("param '", params[i]->name_hint(), "' dim ", d);
        } else if (it->second != got) {
          throw ExecutionError(str(where(i), ": dim ", d, " is symbol '", sym, "' = ", it->second, " (from ",
                                   bound_by[sym], "), but here it is ", got));
        }
      }
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const TypeNode& t = *params[i]->type();
    for (size_t d = 0; d < t.ndim(); ++d) {
      const Dim& dim = t.shape()[d];
      if (dim.is_const()) continue;
      std::optional<int64_t> v;
      try {
        v = dim.evaluate(env);
      } catch (const Error& e) {
        throw ExecutionError(str(where(i), ": dim ", d, " (", dim.to_string(), "): ", e.what()));
      }
      if (!v)
        throw ExecutionError(str(where(i), ": dim ", d, " (", dim.to_string(),
                                 ") uses a symbol that no param binds alone"));
      if (*v != inputs[i].shape()[d])
        throw ExecutionError(str(where(i), ": dim ", d, " is ", dim.to_string(), " = ", *v, ", got ",
                                 inputs[i].shape()[d]));
    }
  }
  return env;
}

std::string CompiledFunction::where(const Instr& ins) const {
  return str("function '", name_, "', binding '", ins.var->name_hint(), "' (op '", ins.ctx.call->op().name, "'): ");
}

// Output k's shape in this run: planned when static, else its dims evaluated
// with the symbols bound from the inputs and its byte size checked.
std::vector<int64_t> CompiledFunction::output_shape(const Instr& ins, size_t k,
                                                    const std::map<std::string, int64_t>& env) const {
  const Type& t = ins.out_types[k];
  if (ins.out_shapes[k].size() == t->ndim()) return ins.out_shapes[k];
  std::vector<int64_t> out;
  out.reserve(t->ndim());
  for (const auto& d : t->shape()) {
    std::optional<int64_t> v;
    try {
      v = d.evaluate(env);
    } catch (const Error& e) {
      throw ExecutionError(str(where(ins), "cannot compute dim ", d.to_string(), " from the inputs: ", e.what()));
    }
    if (!v || *v < 0)
      throw ExecutionError(str(where(ins), "cannot compute dim ", d.to_string(), " from the inputs"));
    out.push_back(*v);
  }
  if (!tensor_bytes(out, t->dtype()))
    throw ExecutionError(str(where(ins), "shape ", shape_to_string(Shape(out.begin(), out.end())), " of ",
                             dtype_name(t->dtype()), " is too large: its byte size does not fit in 64 bits"));
  return out;
}

namespace {
NDArray copy_of(const NDArray& a) {
  NDArray out = NDArray::empty(a.shape(), a.dtype());
  if (a.nbytes()) std::memcpy(out.data(), a.data(), a.nbytes());
  return out;
}
}  // namespace

// Gives the instruction its output buffers, runs its kernel and returns the
// buffers that die here to the pool.
void CompiledFunction::execute(Instr& ins, const std::map<std::string, int64_t>& env) {
  for (size_t k = 0; k < ins.out_slots.size(); ++k) {
    std::vector<int64_t> shape = output_shape(ins, k, env);
    if (ins.inplace_from >= 0) {
      const NDArray& from = slots_[ins.inplace_from];
      slots_[ins.out_slots[k]] = NDArray(std::move(shape), from.dtype(), from.owner(), from.data());
      continue;
    }
    slots_[ins.out_slots[k]] = pool_->take(std::move(shape), ins.out_types[k]->dtype());
  }
  if (!ins.skip_kernel) (*ins.kernel)(ins.ctx);
  if (ins.inplace_from >= 0) slots_[ins.inplace_from] = NDArray();
  for (int s : ins.release_after) pool_->give(slots_[s]);
}

std::vector<NDArray> CompiledFunction::run(const std::vector<NDArray>& inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> env = bind_symbols(inputs);
  pool_->reset_peak();
  for (size_t i = 0; i < inputs.size(); ++i) slots_[param_slots_[i]] = inputs[i];
  // Returns what the pool lent to still-filled slots and drops the inputs.
  auto release_all = [&] {
    for (size_t s = 0; s < slots_.size(); ++s)
      if (pooled_[s]) pool_->give(slots_[s]);
    for (int s : param_slots_) slots_[s] = NDArray();
  };
  try {
    for (auto& ins : instrs_) {
      try {
        execute(ins, env);
      } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(str(where(ins), "out of memory"));
      }
    }
  } catch (...) {
    release_all();
    throw;
  }
  // Results leave without a copy, once each; a result that is an input, a
  // constant or a repeat of another result is copied.
  std::vector<NDArray> out;
  out.reserve(ret_slots_.size());
  std::vector<int> handed;
  for (int s : ret_slots_) {
    bool first = pooled_[s] && std::find(handed.begin(), handed.end(), s) == handed.end();
    if (first) {
      handed.push_back(s);
      pool_->hand_out(slots_[s]);
      out.push_back(slots_[s]);
    } else {
      out.push_back(copy_of(slots_[s]));
    }
  }
  for (int s : handed) slots_[s] = NDArray();
  last_peak_ = pool_->peak_bytes();
  release_all();
  return out;
}

size_t CompiledFunction::pool_bytes() const { return pool_->bytes(); }
size_t CompiledFunction::peak_bytes() const { return last_peak_; }

Executable::Executable(const Module& mod) : mod_(mod) {
  for (const auto& [name, fn] : mod->functions()) fns_[name] = std::make_unique<CompiledFunction>(name, fn);
}

CompiledFunction& Executable::get(const std::string& name) {
  auto it = fns_.find(name);
  if (it == fns_.end()) throw Error(str("the executable has no function '", name, "'"));
  return *it->second;
}

std::vector<std::string> Executable::names() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : mod_->functions()) out.push_back(name);
  return out;
}

}  // namespace aj
