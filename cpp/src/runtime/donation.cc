// Donated inputs (runtime/executor.h, step 5): checking a function's
// aliases, planning which aliased outputs are written straight into their
// inputs' bytes, and handing the results out at the end of a run.
//
// The rule, chosen so that a run that throws leaves every donated input as
// it was: an aliased output is written straight into its input when
//   (a) it is that input (nothing is written), or
//   (b) an instruction P makes it, every read of the input comes before P
//       (or is at P, when P is an elementwise op that may work in place: it
//       reads element i before writing element i), the input is not also a
//       result, the value does not go into another donated input already (a
//       result at two aliased positions), and no op from P on may fail
//       (OpDef::may_fail; a fused group only when it is too wide to run
//       in the stack scratch it falls back to, fusion.h).
// From the first such P on (the tail) nothing can throw: before P runs,
// every output shape of the tail is evaluated and every pool buffer the
// tail needs is taken. Any other aliased output is computed into a pool
// buffer and copied into its input after the last instruction.
#include <algorithm>
#include <cstring>

#include "adjoint/runtime/executor.h"

#include "fusion.h"
#include "buffer_pool.h"

namespace aj {
namespace {

void flat_result_types(const Type& t, std::vector<Type>& out) {
  if (t->is_tensor()) {
    out.push_back(t);
    return;
  }
  for (const auto& f : t->fields()) flat_result_types(f, out);
}

}  // namespace

void CompiledFunction::check_aliases() const {
  const auto& params = fn_->params();
  std::vector<Type> results;
  flat_result_types(fn_->ret_type(), results);
  std::vector<int64_t> by_param(params.size(), -1), by_output(results.size(), -1);
  for (const Alias& a : aliases_) {
    if (a.param >= params.size())
      throw ExecutionError(str("function '", name_, "': cannot donate param #", a.param, " to result #", a.output,
                               ": the function has ", params.size(), " param(s)"));
    std::string what = str("function '", name_, "': cannot donate param '", params[a.param]->name_hint(), "' (#",
                           a.param, ") to result #", a.output);
    if (a.output >= results.size())
      throw ExecutionError(str(what, ": the result has ", results.size(), " tensor(s)"));
    const Type& in = params[a.param]->type();
    const Type& out = results[a.output];
    if (!type_equal(in, out))
      throw ExecutionError(str(what, ": the param is ", in->to_string(), ", the result ", out->to_string()));
    if (by_param[a.param] >= 0)
      throw ExecutionError(str(what, ": the param is donated to result #", by_param[a.param], " already"));
    if (by_output[a.output] >= 0)
      throw ExecutionError(str(what, ": result #", a.output, " takes param '",
                               params[static_cast<size_t>(by_output[a.output])]->name_hint(), "' already"));
    by_param[a.param] = static_cast<int64_t>(a.output);
    by_output[a.output] = static_cast<int64_t>(a.param);
  }
}

void CompiledFunction::plan_aliases() {
  if (aliases_.empty()) return;
  producer_.assign(slots_.size(), -1);
  int last_failing = -1;
  for (size_t i = 0; i < instrs_.size(); ++i) {
    for (int s : instrs_[i].out_slots) producer_[s] = static_cast<int>(i);
    const Instr& ins = instrs_[i];
    if (ins.ctx.call->op().may_fail || (ins.group && ins.group->num_scratch > kMaxFallbackScratch))
      last_failing = static_cast<int>(i);
  }
  for (Alias& a : aliases_) {
    int in = param_slots_[a.param], out = ret_slots_[a.output];
    if (out == in) {
      a.direct = true;
      continue;
    }
    int p = producer_[out];
    if (p <= last_failing || !can_write_directly(a, p)) continue;
    Instr& ins = instrs_[p];
    if (ins.write_into.empty()) ins.write_into.assign(ins.out_slots.size(), -1);
    auto k = std::find(ins.out_slots.begin(), ins.out_slots.end(), out) - ins.out_slots.begin();
    ins.write_into[k] = in;
    pooled_[out] = false;
    direct_slots_.push_back(out);
    a.direct = true;
    tail_start_ = tail_start_ < 0 ? p : std::min(tail_start_, p);
  }
  for (size_t i = std::max(tail_start_, 0); tail_start_ >= 0 && i < instrs_.size(); ++i) instrs_[i].in_tail = true;
}

// Whether the input's last read is before `producer` (or at it, elementwise)
// and not as a result, and the output is not in another input's bytes yet.
bool CompiledFunction::can_write_directly(const Alias& a, int producer) const {
  int in = param_slots_[a.param], out = ret_slots_[a.output];
  if (!pooled_[out]) return false;
  if (std::find(ret_slots_.begin(), ret_slots_.end(), in) != ret_slots_.end()) return false;
  const Instr& made_by = instrs_[producer];
  bool elementwise = made_by.group ? written_after_last_read(made_by, in, out)
                                   : made_by.ctx.call->op().inplace_ok && made_by.out_slots.size() == 1;
  for (size_t i = static_cast<size_t>(producer); i < instrs_.size(); ++i) {
    const auto& reads = instrs_[i].in_slots;
    if (std::find(reads.begin(), reads.end(), in) == reads.end()) continue;
    if (static_cast<int>(i) > producer || !elementwise) return false;
  }
  return true;
}

// For a fused instruction: whether, within each block, its output slot `out`
// is written by a step at or after every step reading input slot `in` at
// the same index (a full-shape input). The block is then read before it is
// overwritten, as by an elementwise op writing over its own input.
bool CompiledFunction::written_after_last_read(const Instr& fused, int in, int out) const {
  auto input = std::find(fused.in_slots.begin(), fused.in_slots.end(), in) - fused.in_slots.begin();
  auto output = std::find(fused.out_slots.begin(), fused.out_slots.end(), out) - fused.out_slots.begin();
  if (static_cast<size_t>(output) == fused.out_slots.size()) return false;
  if (static_cast<size_t>(input) == fused.in_slots.size()) return true;
  if (!type_equal(fused.in_types[static_cast<size_t>(input)], fused.out_types[static_cast<size_t>(output)])) return false;
  const auto& steps = fused.group->steps;
  size_t writer = steps.size();
  for (size_t s = 0; s < steps.size(); ++s)
    if (steps[s].out.where == BlockRef::kOutput && steps[s].out.index == output) writer = s;
  for (size_t s = 0; s < steps.size(); ++s)
    for (const BlockRef& r : steps[s].args)
      if (r.where == BlockRef::kInput && r.index == input && s > writer) return false;
  return writer < steps.size();
}

// Before the first direct write: every output shape of the tail evaluated
// (a symbolic dim that does not evaluate throws here) and every pool buffer
// it needs taken (an allocation that fails throws here).
void CompiledFunction::take_tail_buffers(const std::map<std::string, int64_t>& env) {
  for (size_t i = static_cast<size_t>(tail_start_); i < instrs_.size(); ++i) {
    Instr& ins = instrs_[i];
    for (size_t k = 0; k < ins.out_slots.size(); ++k) {
      std::vector<int64_t> shape = output_shape(ins, k, env);
      bool direct = !ins.write_into.empty() && ins.write_into[k] >= 0;
      if (ins.inplace_from >= 0 || direct) continue;  // over a dying input, a view of it, or a donated input
      slots_[ins.out_slots[k]] = pool_->take(std::move(shape), ins.out_types[k]->dtype());
    }
  }
}

// Results leave without a copy, once each; a result that is an input, a
// constant, a repeat of another result or in a donated input's bytes is
// copied. An aliased result is its donated input's array; one computed
// apart is copied in last, after every copy that reads a donated input (so
// a result that is a donated input is its value before the run).
std::vector<NDArray> CompiledFunction::collect_results(const std::vector<NDArray>& inputs) {
  std::vector<NDArray> out(ret_slots_.size());
  std::vector<bool> aliased(ret_slots_.size(), false);
  for (const Alias& a : aliases_) {
    out[a.output] = inputs[a.param];
    aliased[a.output] = true;
  }
  std::vector<int> handed;
  for (size_t k = 0; k < ret_slots_.size(); ++k) {
    if (aliased[k]) continue;
    int s = ret_slots_[k];
    if (pooled_[s] && std::find(handed.begin(), handed.end(), s) == handed.end()) {
      handed.push_back(s);
      pool_->hand_out(slots_[s]);
      out[k] = slots_[s];
    } else {
      out[k] = counted_copy(slots_[s]);
    }
  }
  auto is_donated = [&](int s) {
    return std::any_of(aliases_.begin(), aliases_.end(), [&](const Alias& a) { return param_slots_[a.param] == s; });
  };
  std::vector<std::pair<const Alias*, NDArray>> deferred;
  for (const Alias& a : aliases_) {
    if (a.direct) continue;
    int s = ret_slots_[a.output];
    deferred.emplace_back(&a, is_donated(s) ? counted_copy(slots_[s]) : slots_[s]);
  }
  for (const auto& [a, value] : deferred) {
    if (value.nbytes()) std::memcpy(inputs[a->param].data(), value.data(), value.nbytes());
    last_stats_.copied_bytes += value.nbytes();
  }
  for (int s : handed) slots_[s] = NDArray();
  return out;
}

}  // namespace aj
