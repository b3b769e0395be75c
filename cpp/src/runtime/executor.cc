// The CPU executor (runtime/executor.h): planning a function into
// instructions over slots, validating inputs, and running the plan.
#include "adjoint/runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "adjoint/analysis/dataflow.h"
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

// The dims of a tensor type when all are constant; empty when one is
// symbolic (the run computes that shape).
std::vector<int64_t> static_shape(const TypeNode& t) {
  std::vector<int64_t> out;
  for (const auto& d : t.shape()) {
    if (!d.is_const()) return {};
    out.push_back(d.value());
  }
  return out;
}

// Binds, in `env`, each symbol that no param has as a dim by itself from the
// first param dim a*k + b in it (as_linear_dim, dim.h): k = (v - b) / a, an
// ExecutionError naming the param and dim when that is no whole k >= 0. The
// caller then checks every dim against the symbols bound.
void bind_linear_symbols(const std::vector<Var>& params, const std::vector<NDArray>& inputs,
                         const std::function<std::string(size_t)>& where, std::map<std::string, int64_t>& env) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Shape& shape = params[i]->type()->shape();
    for (size_t d = 0; d < shape.size(); ++d) {
      std::optional<LinearDim> lin = as_linear_dim(shape[d]);
      if (!lin || env.count(lin->symbol)) continue;
      int64_t got = inputs[i].shape()[d], rest = 0;
      if (__builtin_sub_overflow(got, lin->b, &rest) || rest < 0 || rest % lin->a != 0)
        throw ExecutionError(str(where(i), ": dim ", d, " is ", shape[d].to_string(), ", got ", got, ": no whole ",
                                 lin->symbol, " >= 0 gives it"));
      env[lin->symbol] = rest / lin->a;
    }
  }
}

// p(k): `dim` with k = `value` and the symbols `env` binds; nullopt when that
// overflows int64 (a value past any size).
std::optional<int64_t> value_at(const Dim& dim, const std::string& k, int64_t value,
                                std::map<std::string, int64_t>& env) {
  env[k] = value;
  std::optional<int64_t> v;
  try {
    v = dim.evaluate(env);
  } catch (const Error&) {
  }
  env.erase(k);
  return v;
}

// Binds, in `env`, each symbol left unbound that is the only unbound symbol
// of a param dim growing with it (growing_symbol, dim.h), to the whole
// value >= 0 that gives the dim its size, found by bisection; repeated while
// that binds more. A size no whole value gives is an ExecutionError naming
// the param and dim; a dim that does not grow at the values bound (n*k with
// n = 0) binds nothing.
void bind_growing_symbols(const std::vector<Var>& params, const std::vector<NDArray>& inputs,
                          const std::function<std::string(size_t)>& where, std::map<std::string, int64_t>& env) {
  for (bool bound_one = true; bound_one;) {
    bound_one = false;
    for (size_t i = 0; i < params.size(); ++i) {
      const Shape& shape = params[i]->type()->shape();
      for (size_t d = 0; d < shape.size(); ++d) {
        std::optional<std::string> k = shape[d].is_const() ? std::nullopt : growing_symbol(shape[d], env);
        if (!k) continue;
        int64_t got = inputs[i].shape()[d];
        auto at = [&](int64_t v) { return value_at(shape[d], *k, v, env); };
        std::optional<int64_t> at0 = at(0), at1 = at(1);
        if (!at0 || !at1 || *at1 <= *at0) continue;  // not growing at these values: k stays unbound
        int64_t lo = 0, hi = 1;  // the least value whose p is >= got lies in [lo, hi]
        for (std::optional<int64_t> p = at1; p && *p < got && hi < (int64_t{1} << 62); p = at(hi)) lo = hi, hi *= 2;
        while (lo < hi) {
          int64_t mid = lo + (hi - lo) / 2;
          std::optional<int64_t> p = at(mid);
          if (!p || *p >= got) hi = mid;  // nullopt: past int64, so past got
          else lo = mid + 1;
        }
        if (at(lo) != got)
          throw ExecutionError(str(where(i), ": dim ", d, " is ", shape[d].to_string(), ", got ", got, ": no whole ",
                                   *k, " >= 0 gives it"));
        env[*k] = lo;
        bound_one = true;
      }
    }
  }
}

// Whether v is used, and only as a matmul operand (so a transpose bound to
// v can fold into the GEMM's flags): not returned, and every user a matmul
// call, whose args are tensors, hence v itself.
bool used_only_by_matmul(const DataflowIndex& index, const VarNode* v) {
  if (index.used_by_return(v)) return false;
  std::vector<int64_t> users = index.users(v);
  const auto& bindings = index.function().bindings();
  for (int64_t u : users)
    if (!is_call_of(as<CallNode>(bindings[static_cast<size_t>(u)].value), ops::matmul)) return false;
  return !users.empty();
}

}  // namespace

CompiledFunction::CompiledFunction(std::string name, Function fn, std::vector<Alias> aliases, bool fuse)
    : name_(std::move(name)), fn_(std::move(fn)), fuse_(fuse), aliases_(std::move(aliases)),
      pool_(std::make_unique<BufferPool>()) {
  check_aliases();
  plan();
}

CompiledFunction::~CompiledFunction() = default;

int CompiledFunction::new_slot() {
  slots_.emplace_back();
  pooled_.push_back(false);
  return static_cast<int>(slots_.size() - 1);
}

// What plan() knows while it walks the bindings in order: the slots of each
// var bound so far (by def index), of each constant met, and the slot each
// transpose folded into its matmuls' GEMM flags reads. Each binding gets
// slots of its own (an instruction's outputs) or shares those it reads (a
// tuple field, an alias, a folded transpose).
struct CompiledFunction::SlotPlanner {
  explicit SlotPlanner(CompiledFunction& f)
      : f(f), fn(*f.fn_), index(fn), var_slots(index.num_defs()), transposed_source(index.num_defs(), -1) {}

  CompiledFunction& f;
  const FunctionNode& fn;
  DataflowIndex index;
  std::vector<SlotList> var_slots;     // by def index
  std::vector<int> transposed_source;  // by def index: the slot a folded transpose reads, or -1
  std::unordered_map<const ConstantNode*, int> constant_slots;
  int64_t bound = 0;  // the vars of def index below this are bound

  int64_t def_of(const Expr& e) const {
    auto* v = as<VarNode>(e);
    int64_t d = v ? index.def_index(v) : -1;
    if (d < 0 || d >= bound)
      throw ExecutionError(str("function '", f.name_, "' is not well formed: a var is used before it is bound"));
    return d;
  }

  SlotList slots_of(const Expr& e) {
    if (auto* c = as<ConstantNode>(e)) return {constant_slot(*c)};
    if (auto* t = as<TupleNode>(e)) {
      SlotList out;
      for (const auto& field : t->fields()) {
        SlotList s = slots_of(field);
        out.insert(out.end(), s.begin(), s.end());
      }
      return out;
    }
    return var_slots[static_cast<size_t>(def_of(e))];
  }

  int constant_slot(const ConstantNode& c) {
    auto [it, added] = constant_slots.emplace(&c, -1);
    if (added) {
      it->second = f.new_slot();
      f.slots_[it->second] = c.data();
    }
    return it->second;
  }

  void plan_params() {
    for (size_t i = 0; i < fn.params().size(); ++i) {
      const Var& p = fn.params()[i];
      if (!p->type()->is_tensor())
        throw ExecutionError(str("function '", f.name_, "', param '", p->name_hint(),
                                 "': the executor takes tensor params only, got ", p->type()->to_string()));
      int s = f.new_slot();
      f.param_slots_.push_back(s);
      var_slots[i] = {s};
    }
    bound = static_cast<int64_t>(fn.params().size());
  }

  void plan_binding(size_t i) {
    const Binding& b = fn.bindings()[i];
    bound = static_cast<int64_t>(fn.params().size() + i);
    SlotList& out = var_slots[static_cast<size_t>(bound)];
    if (auto* item = as<TupleGetItemNode>(b.value)) {
      out = field_slots(*item);
    } else if (auto* call = as<CallNode>(b.value); !call) {
      out = slots_of(b.value);
    } else if (is_transpose(call) && used_only_by_matmul(index, b.var.get())) {
      out = slots_of(call->args()[0]);
      transposed_source[static_cast<size_t>(bound)] = out[0];
      ++f.folded_transposes_;
    } else {
      f.instrs_.push_back(instruction(b, *call));
      out = f.instrs_.back().out_slots;
    }
  }

  // The slots of the field `item` reads, a run of its tuple's slots.
  SlotList field_slots(const TupleGetItemNode& item) {
    SlotList whole = slots_of(item.tuple());
    const auto& fields = item.tuple()->type()->fields();
    size_t start = 0;
    for (int k = 0; k < item.index(); ++k) start += count_tensors(fields[k]);
    return SlotList(whole.begin() + start, whole.begin() + start + count_tensors(fields[item.index()]));
  }

  // The instruction running `call`, reading a folded transpose's source with
  // the GEMM flag set, writing new pooled slots.
  Instr instruction(const Binding& b, const CallNode& call) {
    const OpDef& op = call.op();
    if (!op.kernel)
      throw ExecutionError(str("function '", f.name_, "', binding '", b.var->name_hint(), "': op '", op.name,
                               "' has no CPU kernel"));
    Instr ins{};
    ins.kernel = &op.kernel;
    ins.ctx.call = &call;
    ins.var = b.var.get();
    for (size_t a = 0; a < call.args().size(); ++a) {
      const Expr& arg = call.args()[a];
      int folded = arg->kind() == ExprKind::kVar ? transposed_source[static_cast<size_t>(def_of(arg))] : -1;
      if (folded >= 0) {
        ins.in_slots.push_back(folded);
        if (a < 2) ins.ctx.transposed[a] = true;
        continue;
      }
      SlotList s = slots_of(arg);
      ins.in_slots.insert(ins.in_slots.end(), s.begin(), s.end());
    }
    flatten_types(call.type(), ins.out_types);
    for (const auto& t : ins.out_types) {
      int s = f.new_slot();
      f.pooled_[s] = true;
      ins.out_slots.push_back(s);
      ins.out_shapes.push_back(static_shape(*t));
    }
    return ins;
  }

  SlotList return_slots() {
    bound = static_cast<int64_t>(index.num_defs());
    return slots_of(fn.ret());
  }
};

void CompiledFunction::plan() {
  SlotPlanner planner(*this);
  planner.plan_params();
  for (size_t i = 0; i < fn_->bindings().size(); ++i) planner.plan_binding(i);
  ret_slots_ = planner.return_slots();
  if (fuse_) fuse_elementwise();
  plan_releases();
  for (auto& ins : instrs_) {
    for (int s : ins.in_slots) ins.ctx.inputs.push_back(&slots_[s]);
    for (int s : ins.out_slots) ins.ctx.outputs.push_back(&slots_[s]);
  }
}

// Liveness: each pooled slot is released after its last reader (or its
// producer when nothing reads it); returned slots live on. Donated outputs
// and in-place outputs are chosen first, as they change which buffer dies.
void CompiledFunction::plan_releases() {
  std::vector<int> last(slots_.size(), -1);
  for (size_t i = 0; i < instrs_.size(); ++i) {
    for (int s : instrs_[i].out_slots) last[s] = static_cast<int>(i);
    for (int s : instrs_[i].in_slots) last[s] = static_cast<int>(i);
  }
  for (int s : ret_slots_) last[s] = -2;
  plan_aliases();
  for (size_t i = 0; i < instrs_.size(); ++i) choose_inplace(instrs_[i], static_cast<int>(i), last);
  for (size_t s = 0; s < slots_.size(); ++s)
    if (pooled_[s] && last[s] >= 0) instrs_[last[s]].release_after.push_back(static_cast<int>(s));
}

// An elementwise op may write over an input that dies here, when that input
// has the output's type and its buffer is the executor's (not an input or a
// constant); a view op (reshape) takes such an input's buffer as it is and
// runs no kernel (strided_slice: when its slice is one block of the input,
// decided per run by take_view). The input then leaves the release list: the
// output owns it. Only a dying input is viewed, so no later op, in place or
// not, can write to bytes the view still reads, nor read bytes it overwrites.
// A fused instruction (fusion.cc) with one output writes it from its last op,
// after its other ops have read each block, so it may write over an input too.
void CompiledFunction::choose_inplace(Instr& ins, int index, std::vector<int>& last) {
  const OpDef& op = ins.ctx.call->op();
  if ((!op.inplace_ok && !op.is_view) || ins.out_slots.size() != 1 || !ins.write_into.empty()) return;
  const Type& out_type = ins.out_types[0];
  const auto& args = ins.ctx.call->args();
  size_t num_typed = ins.in_types.empty() ? args.size() : ins.in_types.size();
  for (size_t a = 0; a < ins.in_slots.size() && a < num_typed; ++a) {
    int s = ins.in_slots[a];
    if (!pooled_[s] || last[s] != index) continue;
    const Type& in_type = ins.in_types.empty() ? args[a]->type() : ins.in_types[a];
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
  bind_linear_symbols(params, inputs, where, env);
  bind_growing_symbols(params, inputs, where, env);
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
                                 ") uses a symbol that no param binds (as a dim k, a*k + b, or one that grows "
                                 "with k alone, of its own)"));
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

NDArray CompiledFunction::counted_copy(const NDArray& a) {
  NDArray out = NDArray::empty(a.shape(), a.dtype());
  if (a.nbytes()) std::memcpy(out.data(), a.data(), a.nbytes());
  ++last_stats_.allocations;
  last_stats_.allocated_bytes += a.nbytes();
  return out;
}

// Gives the instruction its output buffers, runs its kernel and returns the
// buffers that die here to the pool.
// A view op may skip its kernel only when its output is a block of its input.
void CompiledFunction::execute(Instr& ins, const std::map<std::string, int64_t>& env) {
  bool viewed = ins.skip_kernel && take_view(ins, env);
  if (!viewed) {
    for (size_t k = 0; k < ins.out_slots.size(); ++k) {
      std::vector<int64_t> shape = output_shape(ins, k, env);
      if (ins.inplace_from >= 0 && !ins.skip_kernel) {
        const NDArray& from = slots_[ins.inplace_from];
        slots_[ins.out_slots[k]] = NDArray(std::move(shape), from.dtype(), from.owner(), from.data());
        continue;
      }
      if (!ins.write_into.empty() && ins.write_into[k] >= 0) {
        const NDArray& into = slots_[ins.write_into[k]];
        slots_[ins.out_slots[k]] = NDArray(std::move(shape), into.dtype(), into.owner(), into.data());
        continue;
      }
      if (ins.in_tail) continue;  // taken by take_tail_buffers
      slots_[ins.out_slots[k]] = pool_->take(std::move(shape), ins.out_types[k]->dtype());
    }
    (*ins.kernel)(ins.ctx);
  }
  if (ins.inplace_from >= 0) {
    // A view op that copied after all: its input dies here like any other.
    if (ins.skip_kernel && !viewed) pool_->give(slots_[ins.inplace_from]);
    else slots_[ins.inplace_from] = NDArray();
  }
  for (int s : ins.release_after) pool_->give(slots_[s]);
}

// The output of a view op becomes the bytes of its dying input from the op's
// offset (0 unless the op has a view_offset rule); false when the rule says
// the output is not one contiguous block of the input in this run.
bool CompiledFunction::take_view(Instr& ins, const std::map<std::string, int64_t>& env) {
  const NDArray& from = slots_[ins.inplace_from];
  const OpDef& op = ins.ctx.call->op();
  std::vector<int64_t> shape = output_shape(ins, 0, env);
  std::optional<int64_t> offset = op.view_offset ? op.view_offset(*ins.ctx.call, from.shape(), shape) : 0;
  if (!offset) return false;
  char* data = static_cast<char*>(from.data()) + *offset * static_cast<int64_t>(dtype_size(from.dtype()));
  NDArray view(std::move(shape), from.dtype(), from.owner(), data);
  pool_->narrow(from.nbytes(), view.nbytes());
  slots_[ins.out_slots[0]] = std::move(view);
  return true;
}

std::vector<NDArray> CompiledFunction::run(const std::vector<NDArray>& inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> env = bind_symbols(inputs);
  pool_->reset_peak();
  pool_->reset_counts();
  last_stats_ = RunStats{};
  for (size_t i = 0; i < inputs.size(); ++i) slots_[param_slots_[i]] = inputs[i];
  // Returns what the pool lent to still-filled slots and drops the inputs.
  auto release_all = [&] {
    for (int s : direct_slots_) slots_[s] = NDArray();
    for (size_t s = 0; s < slots_.size(); ++s)
      if (pooled_[s]) pool_->give(slots_[s]);
    for (int s : param_slots_) slots_[s] = NDArray();
    last_stats_.allocations += pool_->allocations();
    last_stats_.allocated_bytes += pool_->allocated_bytes();
  };
  try {
    for (size_t i = 0; i < instrs_.size(); ++i) {
      Instr& ins = instrs_[i];
      try {
        if (static_cast<int>(i) == tail_start_) take_tail_buffers(env);
        execute(ins, env);
      } catch (const std::bad_alloc&) {
        throw OutOfMemoryError(str(where(ins), "out of memory"));
      } catch (const ExecutionError& e) {
        // A kernel refusing its data ("op 'take': index 5 is out of range
        // ...") says which of the function's bindings it ran for.
        std::string_view what = e.what();
        if (what.rfind("function '", 0) == 0) throw;
        throw ExecutionError(str("function '", name_, "', binding '", ins.var->name_hint(), "': ", what));
      }
    }
  } catch (...) {
    release_all();
    throw;
  }
  std::vector<NDArray> out;
  try {
    out = collect_results(inputs);
  } catch (const std::bad_alloc&) {
    release_all();
    throw OutOfMemoryError(str("function '", name_, "': out of memory copying its results"));
  }
  last_peak_ = pool_->peak_bytes();
  release_all();
  return out;
}

size_t CompiledFunction::pool_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_->bytes();
}

size_t CompiledFunction::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_peak_;
}

RunStats CompiledFunction::last_run_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_stats_;
}

std::unique_ptr<CompiledFunction> Executable::donating(const std::string& name, std::vector<Alias> aliases) const {
  auto it = fns_.find(name);
  if (it == fns_.end()) throw Error(str("the executable has no function '", name, "'"));
  return std::make_unique<CompiledFunction>(name, it->second->function(), std::move(aliases), fuse_);
}

Executable::Executable(const Module& mod, bool fuse) : mod_(mod), fuse_(fuse) {
  for (const auto& [name, fn] : mod->functions()) fns_[name] = std::make_unique<CompiledFunction>(name, fn, std::vector<Alias>{}, fuse);
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
