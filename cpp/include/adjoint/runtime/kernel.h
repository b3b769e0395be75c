// What a CPU kernel sees: the call it runs (op, resolved attrs, symbolic arg
// types), its input arrays, and output arrays already allocated with concrete
// shapes. The executor builds one KernelContext per call at plan time and
// only re-points arrays between runs, so a kernel call costs no allocation.
#pragma once

#include <array>
#include <vector>

#include "adjoint/ir/ndarray.h"
#include "adjoint/op/registry.h"

namespace aj {

struct KernelContext : AttrReader<KernelContext> {
  const CallNode* call = nullptr;
  // Tensor args in order; a tuple arg (concat) contributes its fields in order.
  std::vector<const NDArray*> inputs;
  // One per tensor result; a tuple result (split) has one per field.
  std::vector<NDArray*> outputs;
  // matmul only: input i holds the transpose (last two axes swapped) of the
  // operand, which the kernel folds into the GEMM transpose flag.
  std::array<bool, 2> transposed{false, false};

  const OpDef& op_def() const { return call->op(); }
  const Attrs& attr_values() const { return call->attrs(); }
  const NDArray& in(size_t i) const { return *inputs[i]; }
  NDArray& out(size_t i = 0) const { return *outputs[i]; }

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    throw ExecutionError(str("op '", call->op().name, "': ", parts...));
  }
};

}  // namespace aj
