// Compiled programs for fused groups (fusion.h). The block interpreter
// (fused_kernel.cc) runs a group one op at a time over a block in cache:
// every op loads and stores its block, and a divide or sqrt step keeps the
// core's other units idle. A group whose program matches one written here
// runs as one loop instead, each element through all the ops in registers,
// with the same operations in the same order (no contraction: the build has
// -ffp-contract=off), so the bits are those of the ops run one by one.
//
// The programs here are the per-param updates of training/optim.py's
// optimizers, for float32 and float64: the bulk of the elementwise work of a
// training step, run over every weight each step. Adam and AdamW (with
// coupled weight decay, amsgrad, and both of torch.lerp's rounding orders),
// SGD with momentum (plain or Nesterov, with or without weight decay) and
// RMSprop (with or without weight decay). The hyperparameters are inputs
// (one element each), read at run time.
#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "adjoint/runtime/kernel_util.h"
#include "adjoint/runtime/parallel.h"
#include "fusion.h"

namespace aj {
namespace {

// How an update applies weight decay: not at all, added to the grad
// (g + p * decay: Adam, SGD, RMSprop), or to the param (p * decay: AdamW).
enum class Decay : uint8_t { kNone, kCoupled, kDecoupled };

// The operands of an update loop: its arrays, its outputs and its
// hyperparameters, each named by the family's loop below.
template <typename T>
struct UpdateArgs {
  const T* in[5];
  T* out[4];
  T h[7];
};

// The grad an update steps with.
template <typename T, Decay kDecay>
[[gnu::always_inline]] inline T decayed_grad(T g, T p, T decay) {
  return kDecay == Decay::kCoupled ? g + p * decay : g;
}

// Adam (torch.optim.Adam's single-tensor rule, as training/optim.py writes
// it). in: p, g, m, v, max_v; out: m, v, [max_v,] p; h: decay, lerp weight,
// beta2, 1 - beta2, sqrt(bias correction 2), eps, step size. The first
// moment is torch.lerp(m, g, 1 - beta1) in its rounding order: from m when
// the weight is under 0.5, else from g (kFromEnd, lerp weight = beta1).
// Elements [first, last). Each element is read before it is written, and no
// element reads another, so an output may be its input's array (a donated
// param or state): ivdep tells the vectorizer so.
template <typename T, Decay kDecay, bool kAmsgrad, bool kFromEnd>
AJ_MULTIVERSION void adam_range(const UpdateArgs<T>& a, int64_t first, int64_t last) {
  const T decay = a.h[0], lerp_weight = a.h[1], beta2 = a.h[2], one_minus_beta2 = a.h[3];
  const T bias_correction2_sqrt = a.h[4], eps = a.h[5], step_size = a.h[6];
  T* p_out = a.out[kAmsgrad ? 3 : 2];
#pragma GCC ivdep
  for (int64_t i = first; i < last; ++i) {
    T p = kDecay == Decay::kDecoupled ? a.in[0][i] * decay : a.in[0][i];
    T g = decayed_grad<T, kDecay>(a.in[1][i], a.in[0][i], decay), m = a.in[2][i];
    T m1 = kFromEnd ? g - (g - m) * lerp_weight : m + (g - m) * lerp_weight;
    T v1 = a.in[3][i] * beta2 + g * one_minus_beta2 * g;
    T v = v1;
    if constexpr (kAmsgrad) {
      T max_v = a.in[4][i];
      v = (max_v >= v1 || max_v != max_v) ? max_v : v1;  // the maximum op's NaN rule
      a.out[2][i] = v;
    }
    T denom = std::sqrt(v) / bias_correction2_sqrt + eps;
    a.out[0][i] = m1;
    a.out[1][i] = v1;
    p_out[i] = p - step_size * m1 / denom;
  }
}

// SGD with momentum (dampening 0). in: p, g, buf; out: buf, p; h: decay,
// momentum, momentum again (Nesterov's), lr.
template <typename T, Decay kDecay, bool kNesterov>
AJ_MULTIVERSION void sgd_momentum_range(const UpdateArgs<T>& a, int64_t first, int64_t last) {
  const T decay = a.h[0], momentum = a.h[1], nesterov_momentum = a.h[2], lr = a.h[3];
#pragma GCC ivdep
  for (int64_t i = first; i < last; ++i) {
    T p = a.in[0][i], g = decayed_grad<T, kDecay>(a.in[1][i], p, decay);
    T buf = a.in[2][i] * momentum + g;
    T step = kNesterov ? g + buf * nesterov_momentum : buf;
    a.out[0][i] = buf;
    a.out[1][i] = p - lr * step;
  }
}

// RMSprop (not centered, no momentum). in: p, g, square_avg; out:
// square_avg, p; h: decay, alpha, 1 - alpha, eps, lr.
template <typename T, Decay kDecay>
AJ_MULTIVERSION void rmsprop_range(const UpdateArgs<T>& a, int64_t first, int64_t last) {
  const T decay = a.h[0], alpha = a.h[1], one_minus_alpha = a.h[2], eps = a.h[3], lr = a.h[4];
#pragma GCC ivdep
  for (int64_t i = first; i < last; ++i) {
    T p = a.in[0][i], g = decayed_grad<T, kDecay>(a.in[1][i], p, decay);
    T avg = a.in[2][i] * alpha + g * one_minus_alpha * g;
    a.out[0][i] = avg;
    a.out[1][i] = p - lr * g / (std::sqrt(avg) + eps);
  }
}

enum class Family : uint8_t { kAdam, kSgdMomentum, kRmsprop };

// A program: its name, family and variant, its text (fusion.h) after the
// dtype, and where its loop finds its operands: the group's input index of
// each array the family's loop reads (UpdateArgs::in, in its order), then of
// each hyperparameter (UpdateArgs::h), -1 for one the variant has not. An
// Adam text lerps the first moment from m; `lerp_from_end` is that step and
// its spelling from g, which the same program also matches (kFromEnd).
struct Program {
  const char* name;
  Family family;
  Decay decay;
  bool amsgrad, nesterov;
  std::string_view text;
  std::array<std::string_view, 2> lerp_from_end;
  std::array<int, 12> inputs;
};

constexpr int kArrays = 5;  // entries of Program::inputs for UpdateArgs::in

const Program kPrograms[] = {
    {"adam", Family::kAdam, Decay::kNone, false, false,
     "subtract(i0, i1) ; multiply(s0, i2:1) ; add(i1, s1)> ; multiply(i3, i4:1) ; multiply(i0, i5:1) ; "
     "multiply(s4, i0) ; add(s3, s5)> ; sqrt(s6) ; divide(s7, i6:1) ; add(s8, i7:1) ; multiply(i8:1, s2) ; "
     "divide(s10, s9) ; subtract(i9, s11)>",
     {"add(i1, s1)>", "subtract(i0, s1)>"},
     {9, 0, 1, 3, -1, -1, 2, 4, 5, 6, 7, 8}},
    {"adam", Family::kAdam, Decay::kCoupled, false, false,
     "multiply(i0, i1:1) ; add(i2, s0) ; subtract(s1, i3) ; multiply(s2, i4:1) ; add(i3, s3)> ; "
     "multiply(i5, i6:1) ; multiply(s1, i7:1) ; multiply(s6, s1) ; add(s5, s7)> ; sqrt(s8) ; divide(s9, i8:1) ; "
     "add(s10, i9:1) ; multiply(i10:1, s4) ; divide(s12, s11) ; subtract(i0, s13)>",
     {"add(i3, s3)>", "subtract(s1, s3)>"},
     {0, 2, 3, 5, -1, 1, 4, 6, 7, 8, 9, 10}},
    {"adam", Family::kAdam, Decay::kNone, true, false,
     "subtract(i0, i1) ; multiply(s0, i2:1) ; add(i1, s1)> ; multiply(i3, i4:1) ; multiply(i0, i5:1) ; "
     "multiply(s4, i0) ; add(s3, s5)> ; maximum(i6, s6)> ; sqrt(s7) ; divide(s8, i7:1) ; add(s9, i8:1) ; "
     "multiply(i9:1, s2) ; divide(s11, s10) ; subtract(i10, s12)>",
     {"add(i1, s1)>", "subtract(i0, s1)>"},
     {10, 0, 1, 3, 6, -1, 2, 4, 5, 7, 8, 9}},
    {"adam", Family::kAdam, Decay::kCoupled, true, false,
     "multiply(i0, i1:1) ; add(i2, s0) ; subtract(s1, i3) ; multiply(s2, i4:1) ; add(i3, s3)> ; "
     "multiply(i5, i6:1) ; multiply(s1, i7:1) ; multiply(s6, s1) ; add(s5, s7)> ; maximum(i8, s8)> ; sqrt(s9) ; "
     "divide(s10, i9:1) ; add(s11, i10:1) ; multiply(i11:1, s4) ; divide(s13, s12) ; subtract(i0, s14)>",
     {"add(i3, s3)>", "subtract(s1, s3)>"},
     {0, 2, 3, 5, 8, 1, 4, 6, 7, 9, 10, 11}},
    {"adamw", Family::kAdam, Decay::kDecoupled, false, false,
     "multiply(i0, i1:1) ; subtract(i2, i3) ; multiply(s1, i4:1) ; add(i3, s2)> ; multiply(i5, i6:1) ; "
     "multiply(i2, i7:1) ; multiply(s5, i2) ; add(s4, s6)> ; sqrt(s7) ; divide(s8, i8:1) ; add(s9, i9:1) ; "
     "multiply(i10:1, s3) ; divide(s11, s10) ; subtract(s0, s12)>",
     {"add(i3, s2)>", "subtract(i2, s2)>"},
     {0, 2, 3, 5, -1, 1, 4, 6, 7, 8, 9, 10}},
    {"adamw", Family::kAdam, Decay::kDecoupled, true, false,
     "multiply(i0, i1:1) ; subtract(i2, i3) ; multiply(s1, i4:1) ; add(i3, s2)> ; multiply(i5, i6:1) ; "
     "multiply(i2, i7:1) ; multiply(s5, i2) ; add(s4, s6)> ; maximum(i8, s7)> ; sqrt(s8) ; divide(s9, i9:1) ; "
     "add(s10, i10:1) ; multiply(i11:1, s3) ; divide(s12, s11) ; subtract(s0, s13)>",
     {"add(i3, s2)>", "subtract(i2, s2)>"},
     {0, 2, 3, 5, 8, 1, 4, 6, 7, 9, 10, 11}},
    {"sgd_momentum", Family::kSgdMomentum, Decay::kNone, false, false,
     "multiply(i0, i1:1) ; add(s0, i2)> ; multiply(i3:1, s1) ; subtract(i4, s2)>",
     {},
     {4, 2, 0, -1, -1, -1, 1, -1, 3, -1, -1, -1}},
    {"sgd_momentum", Family::kSgdMomentum, Decay::kNone, false, true,
     "multiply(i0, i1:1) ; add(s0, i2)> ; multiply(s1, i3:1) ; add(i2, s2) ; multiply(i4:1, s3) ; "
     "subtract(i5, s4)>",
     {},
     {5, 2, 0, -1, -1, -1, 1, 3, 4, -1, -1, -1}},
    {"sgd_momentum", Family::kSgdMomentum, Decay::kCoupled, false, false,
     "multiply(i0, i1:1) ; add(i2, s0) ; multiply(i3, i4:1) ; add(s2, s1)> ; multiply(i5:1, s3) ; "
     "subtract(i0, s4)>",
     {},
     {0, 2, 3, -1, -1, 1, 4, -1, 5, -1, -1, -1}},
    {"sgd_momentum", Family::kSgdMomentum, Decay::kCoupled, false, true,
     "multiply(i0, i1:1) ; add(i2, s0) ; multiply(i3, i4:1) ; add(s2, s1)> ; multiply(s3, i5:1) ; add(s1, s4) ; "
     "multiply(i6:1, s5) ; subtract(i0, s6)>",
     {},
     {0, 2, 3, -1, -1, 1, 4, 5, 6, -1, -1, -1}},
    {"rmsprop", Family::kRmsprop, Decay::kNone, false, false,
     "multiply(i0, i1:1) ; multiply(i2, i3:1) ; multiply(s1, i2) ; add(s0, s2)> ; sqrt(s3) ; add(s4, i4:1) ; "
     "multiply(i5:1, i2) ; divide(s6, s5) ; subtract(i6, s7)>",
     {},
     {6, 2, 0, -1, -1, -1, 1, 3, 4, 5, -1, -1}},
    {"rmsprop", Family::kRmsprop, Decay::kCoupled, false, false,
     "multiply(i0, i1:1) ; add(i2, s0) ; multiply(i3, i4:1) ; multiply(s1, i5:1) ; multiply(s3, s1) ; "
     "add(s2, s4)> ; sqrt(s5) ; add(s6, i6:1) ; multiply(i7:1, s1) ; divide(s8, s7) ; subtract(i0, s9)>",
     {},
     {0, 2, 3, -1, -1, 1, 4, 5, 6, 7, -1, -1}},
};

// The range function of a program's family and variant, for T.
template <typename T>
using RangeFn = void (*)(const UpdateArgs<T>&, int64_t, int64_t);

template <typename T, Decay kDecay>
RangeFn<T> adam_range_of(const Program& p, bool from_end) {
  if (p.amsgrad) return from_end ? adam_range<T, kDecay, true, true> : adam_range<T, kDecay, true, false>;
  return from_end ? adam_range<T, kDecay, false, true> : adam_range<T, kDecay, false, false>;
}

template <typename T, Decay kDecay>
RangeFn<T> range_of_decay(const Program& p, bool from_end) {
  switch (p.family) {
    case Family::kAdam:
      return adam_range_of<T, kDecay>(p, from_end);
    case Family::kSgdMomentum:
      return p.nesterov ? sgd_momentum_range<T, kDecay, true> : sgd_momentum_range<T, kDecay, false>;
    case Family::kRmsprop:
      return rmsprop_range<T, kDecay>;
  }
  return nullptr;
}

template <typename T>
RangeFn<T> range_of(const Program& p, bool from_end) {
  switch (p.decay) {
    case Decay::kNone:
      return range_of_decay<T, Decay::kNone>(p, from_end);
    case Decay::kCoupled:
      return range_of_decay<T, Decay::kCoupled>(p, from_end);
    case Decay::kDecoupled:
      return adam_range_of<T, Decay::kDecoupled>(p, from_end);
  }
  return nullptr;
}

// Elementwise ops per element, for the parallel grain.
int ops_per_element(const Program& p) {
  return p.family == Family::kAdam ? 14 : p.family == Family::kRmsprop ? 10 : 6;
}

template <typename T>
Kernel update_kernel(const Program& program, bool from_end) {
  return [program, range = range_of<T>(program, from_end)](KernelContext& ctx) {
    auto in = [&](size_t k) {
      int input = program.inputs[k];
      return input < 0 ? nullptr : static_cast<const T*>(ctx.in(static_cast<size_t>(input)).data());
    };
    UpdateArgs<T> a{};
    for (size_t k = 0; k < kArrays; ++k) a.in[k] = in(k);
    for (size_t k = 0; k < ctx.outputs.size() && k < 4; ++k) a.out[k] = static_cast<T*>(ctx.out(k).data());
    // The hyperparameters are read once, before any output is written; an
    // absent decay is 1 (as a factor on p) and never read as a term.
    for (size_t k = 0; k + kArrays < program.inputs.size(); ++k) {
      const T* h = in(kArrays + k);
      a.h[k] = h ? h[0] : T(1);
    }
    int64_t n = ctx.out(0).numel();
    parallel_for(n, std::max<int64_t>(1, kParallelGrain / ops_per_element(program)),
                 [&](int64_t first, int64_t last) { range(a, first, last); });
  };
}

// Whether `steps` is `text` with its step `from` (which it holds once)
// spelled `to` instead.
bool is_with_step_replaced(std::string_view steps, std::string_view text, std::string_view from,
                           std::string_view to) {
  size_t at = text.find(from);
  if (at == std::string_view::npos || steps.size() != text.size() - from.size() + to.size()) return false;
  return steps.substr(0, at) == text.substr(0, at) && steps.substr(at, to.size()) == to &&
         steps.substr(at + to.size()) == text.substr(at + from.size());
}

}  // namespace

Kernel compiled_program(const FusedGroup& group, std::string& name) {
  name.clear();
  std::string_view text = group.program;
  size_t colon = text.find(": ");
  if (colon == std::string_view::npos) return Kernel();
  std::string_view dtype = text.substr(0, colon), steps = text.substr(colon + 2);
  for (const Program& program : kPrograms) {
    const auto& [from_m, from_g] = program.lerp_from_end;
    bool from_end = !from_m.empty() && is_with_step_replaced(steps, program.text, from_m, from_g);
    if (!from_end && steps != program.text) continue;
    if (dtype == "float32") {
      name = program.name;
      return update_kernel<float>(program, from_end);
    }
    if (dtype == "float64") {
      name = program.name;
      return update_kernel<double>(program, from_end);
    }
  }
  return Kernel();
}

}  // namespace aj
