// The compile-time analysis (see analysis/compile_time.h): two forward walks
// of the DataflowIndex, one for "uses only weights" and one for "uses a
// weight".
#include "adjoint/analysis/compile_time.h"

namespace aj {

namespace {

DataflowIndex::VarPredicate weights_of(const DataflowIndex& index) {
  const int64_t num_input = static_cast<int64_t>(index.function().num_input());
  return [&index, num_input](const VarNode* v) { return index.param_index(v) >= num_input; };
}

}  // namespace

std::vector<uint8_t> computable_bindings(const DataflowIndex& index) {
  return index.depends_only_on(weights_of(index));
}

std::vector<uint8_t> weight_dependent_bindings(const DataflowIndex& index, const std::vector<uint8_t>& computable) {
  std::vector<uint8_t> out = index.depends_on(weights_of(index));
  for (size_t b = 0; b < out.size(); ++b) out[b] &= computable[b];
  return out;
}

std::vector<Var> computable_at_compile_time(const FunctionNode& fn) {
  DataflowIndex index(fn);
  std::vector<uint8_t> computable = computable_bindings(index);
  std::vector<Var> out(fn.params().begin() + static_cast<std::ptrdiff_t>(fn.num_input()), fn.params().end());
  for (size_t b = 0; b < computable.size(); ++b)
    if (computable[b]) out.push_back(fn.bindings()[b].var);
  return out;
}

}  // namespace aj
