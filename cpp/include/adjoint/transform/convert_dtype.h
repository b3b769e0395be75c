// ConvertDType: every value of one float dtype in a module as another
// (float32 as float64 for finite differences, or back).
#pragma once

#include "adjoint/ir/function.h"

namespace aj {

// Every `from` value of every function becomes a `to` value: params,
// constants (elements converted), the dtype attrs of calls (zeros(...,
// "float32"), astype(x, "float32"), matmul's out_dtype) that name `from`,
// and the type of every binding, inferred again; a divide of ints or bools
// (float64) takes them as `to` when `from` is float64. Values of other dtypes
// (ints, bools) stay as they are, and so does a function with no `from`
// value (the same object). Throws TransformError unless `from` and `to` are
// two different float dtypes; an op's TypeInferenceError names the pass and
// the binding.
Module convert_dtype(const Module& mod, DType to, DType from);
Function convert_dtype(const Function& fn, DType to, DType from);

}  // namespace aj
