// Compiled programs for fused groups (fusion.h). The block interpreter
// (fused_kernel.cc) runs a group one op at a time over a block in cache:
// every op loads and stores its block, and a divide or sqrt step keeps the
// core's other units idle. A group whose program matches one written here
// runs as one loop instead, each element through all the ops in registers,
// with the same operations in the same order (no contraction: the build has
// -ffp-contract=off), so the bits are those of the ops run one by one.
//
// The programs here are the per-param updates of training/optim.py's Adam
// and AdamW (decoupled weight decay), for float32 and float64: the bulk of
// the elementwise work of a training step, run over every weight each step.
// The hyperparameters are inputs (one element each), read at run time.
#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "adjoint/runtime/kernel_util.h"
#include "adjoint/runtime/parallel.h"
#include "fusion.h"

namespace aj {
namespace {

// The arrays and hyperparameters of one Adam update (torch.optim.Adam's
// single-tensor rule, as training/optim.py writes it).
template <typename T>
struct AdamArgs {
  const T *p, *g, *m, *v;
  T *p_out, *m_out, *v_out;
  T decay, lerp_weight, beta2, one_minus_beta2, bias_correction2_sqrt, eps, step_size;
};

// Elements [first, last). Each element is read before it is written, and
// no element reads another, so an output may be its input's array (a
// donated param or state): ivdep tells the vectorizer so. The first moment
// is torch.lerp(m, g, 1 - beta1) in its rounding order: from m when the
// weight is under 0.5, else from g (kFromEnd, lerp_weight = beta1).
template <typename T, bool kDecoupled, bool kFromEnd>
AJ_MULTIVERSION void adam_range(const AdamArgs<T>& a, int64_t first, int64_t last) {
#pragma GCC ivdep
  for (int64_t i = first; i < last; ++i) {
    T p = kDecoupled ? a.p[i] * a.decay : a.p[i];
    T g = a.g[i], m = a.m[i];
    T m1 = kFromEnd ? g - (g - m) * a.lerp_weight : m + (g - m) * a.lerp_weight;
    T v1 = a.v[i] * a.beta2 + g * a.one_minus_beta2 * g;
    T denom = std::sqrt(v1) / a.bias_correction2_sqrt + a.eps;
    a.m_out[i] = m1;
    a.v_out[i] = v1;
    a.p_out[i] = p - a.step_size * m1 / denom;
  }
}

// A program: its text (fusion.h) after the dtype, its name, and where its
// kernel finds the update's operands: input indices, in AdamArgs order
// (p, g, m, v, then decay or -1 and the hyperparameters); the outputs are
// m, v, p in every program here.
struct AdamProgram {
  const char* name;
  bool decoupled, from_end;
  std::string_view text;
  std::array<int, 11> inputs;
};

const AdamProgram kPrograms[] = {
    {"adam", false, false,
     "subtract(i0, i1) ; multiply(s0, i2:1) ; add(i1, s1)> ; multiply(i3, i4:1) ; multiply(i0, i5:1) ; "
     "multiply(s4, i0) ; add(s3, s5)> ; sqrt(s6) ; divide(s7, i6:1) ; add(s8, i7:1) ; multiply(i8:1, s2) ; "
     "divide(s10, s9) ; subtract(i9, s11)>",
     {9, 0, 1, 3, -1, 2, 4, 5, 6, 7, 8}},
    {"adam", false, true,
     "subtract(i0, i1) ; multiply(s0, i2:1) ; subtract(i0, s1)> ; multiply(i3, i4:1) ; multiply(i0, i5:1) ; "
     "multiply(s4, i0) ; add(s3, s5)> ; sqrt(s6) ; divide(s7, i6:1) ; add(s8, i7:1) ; multiply(i8:1, s2) ; "
     "divide(s10, s9) ; subtract(i9, s11)>",
     {9, 0, 1, 3, -1, 2, 4, 5, 6, 7, 8}},
    {"adamw", true, false,
     "multiply(i0, i1:1) ; subtract(i2, i3) ; multiply(s1, i4:1) ; add(i3, s2)> ; multiply(i5, i6:1) ; "
     "multiply(i2, i7:1) ; multiply(s5, i2) ; add(s4, s6)> ; sqrt(s7) ; divide(s8, i8:1) ; add(s9, i9:1) ; "
     "multiply(i10:1, s3) ; divide(s11, s10) ; subtract(s0, s12)>",
     {0, 2, 3, 5, 1, 4, 6, 7, 8, 9, 10}},
    {"adamw", true, true,
     "multiply(i0, i1:1) ; subtract(i2, i3) ; multiply(s1, i4:1) ; subtract(i2, s2)> ; multiply(i5, i6:1) ; "
     "multiply(i2, i7:1) ; multiply(s5, i2) ; add(s4, s6)> ; sqrt(s7) ; divide(s8, i8:1) ; add(s9, i9:1) ; "
     "multiply(i10:1, s3) ; divide(s11, s10) ; subtract(s0, s12)>",
     {0, 2, 3, 5, 1, 4, 6, 7, 8, 9, 10}},
};

template <typename T, bool kDecoupled>
void adam_range_of(const AdamProgram& program, const AdamArgs<T>& a, int64_t first, int64_t last) {
  if (program.from_end) adam_range<T, kDecoupled, true>(a, first, last);
  else adam_range<T, kDecoupled, false>(a, first, last);
}

template <typename T>
Kernel adam_kernel(const AdamProgram& program) {
  return [program](KernelContext& ctx) {
    auto input = [&](int k) { return program.inputs[static_cast<size_t>(k)]; };
    auto in = [&](int k) { return static_cast<const T*>(ctx.in(static_cast<size_t>(input(k))).data()); };
    // The hyperparameters are read once, before any output is written.
    auto scalar = [&](int k) { return input(k) < 0 ? T(1) : in(k)[0]; };
    int64_t n = ctx.out(0).numel();
    AdamArgs<T> a{in(0), in(1), in(2), in(3),
                  static_cast<T*>(ctx.out(2).data()), static_cast<T*>(ctx.out(0).data()),
                  static_cast<T*>(ctx.out(1).data()),
                  scalar(4), scalar(5), scalar(6), scalar(7), scalar(8), scalar(9), scalar(10)};
    constexpr int64_t kOpsPerElement = 14;
    parallel_for(n, std::max<int64_t>(1, kParallelGrain / kOpsPerElement), [&](int64_t first, int64_t last) {
      if (program.decoupled) adam_range_of<T, true>(program, a, first, last);
      else adam_range_of<T, false>(program, a, first, last);
    });
  };
}

}  // namespace

Kernel compiled_program(const FusedGroup& group, std::string& name) {
  name.clear();
  std::string_view text = group.program;
  size_t colon = text.find(": ");
  if (colon == std::string_view::npos) return Kernel();
  std::string_view dtype = text.substr(0, colon), steps = text.substr(colon + 2);
  for (const AdamProgram& program : kPrograms) {
    if (steps != program.text) continue;
    if (dtype == "float32") {
      name = program.name;
      return adam_kernel<float>(program);
    }
    if (dtype == "float64") {
      name = program.name;
      return adam_kernel<double>(program);
    }
  }
  return Kernel();
}

}  // namespace aj
