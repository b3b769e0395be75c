// A coverage-guided (libFuzzer) target for the passes: the C++ side of
// `python -m adjoint.fuzz passes`, steered by the passes' branch coverage.
// Each input is a text; a module that parses and verifies goes through every
// pass, and through a pipeline of them (Gradient first when it applies, each
// pass taking the previous one's output). A pass may refuse its input with an
// aj::Error (Gradient of a function without a float scalar result, say);
// what it returns must verify fully. The passes that only move, share or
// drop values (DeadCodeElimination, EliminateCommonSubexpr,
// ReorderPermuteDimsAfterConcat, LiftTransformParams) must also keep the
// bits: each small function of the input among the first kMaxFunctions
// (fuzz_run.h) is run before and after on the same inputs (after
// LiftTransformParams, through its f_transform_params), and where the input
// ran, the output must run to the same results. Not where a matmul is
// involved: these passes may change which transposes the executor folds
// into GEMM flags (a transpose's other use removed, two merged, one moved
// into f_transform_params), and OpenBLAS rounds a transposed read otherwise.
// The passes that change the arithmetic, and matmuls, are held to a
// tolerance by the Python target, which runs them too. Anything else that
// comes out, and every sanitizer report, is a finding.
// Built by CMake with -DADJOINT_LIBFUZZER=ON and clang (README, "Fuzzing").
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "adjoint/analysis/verifier.h"
#include "adjoint/autodiff/gradient.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/op/ops.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/convert_dtype.h"
#include "adjoint/transform/passes.h"
#include "fuzz_run.h"

namespace {

using namespace aj::fuzz;
using Pass = std::function<aj::Module(const aj::Module&)>;

struct NamedPass {
  const char* name;
  Pass pass;
  bool exact;  // the output computes the input's bits
};

const std::vector<NamedPass>& passes() {
  static const std::vector<NamedPass> all = {
      {"DeadCodeElimination", [](const aj::Module& m) { return aj::dead_code_elimination(m); }, true},
      {"EliminateCommonSubexpr", [](const aj::Module& m) { return aj::eliminate_common_subexpr(m); }, true},
      {"SimplifyGradient", [](const aj::Module& m) { return aj::simplify_gradient(m); }, false},
      {"CombineParallelMatmul", [](const aj::Module& m) { return aj::combine_parallel_matmul(m); }, false},
      {"ReorderPermuteDimsAfterConcat", [](const aj::Module& m) { return aj::reorder_permute_dims_after_concat(m); },
       true},
      {"LiftTransformParams", [](const aj::Module& m) { return aj::lift_transform_params(m); }, true},
      {"ReassociateMatmul", [](const aj::Module& m) { return aj::reassociate_matmul(m); }, false},
      {"ConvertDType",
       [](const aj::Module& m) { return aj::convert_dtype(m, aj::DType::kFloat64, aj::DType::kFloat32); }, false},
  };
  return all;
}

std::string before_and_after(const aj::Module& in, const aj::Module& out) {
  return program(aj::print_module(in)) + "--- output:\n" + aj::print_module(out);
}

// `pass` on `mod`: its output, or `mod` when the pass refused it.
aj::Module run_checked(const char* name, const Pass& pass, const aj::Module& mod) {
  aj::Module out;
  try {
    out = pass(mod);
  } catch (const aj::Error&) {
    return mod;
  } catch (const std::bad_alloc&) {
    return mod;
  } catch (const std::exception& e) {
    finding(std::string(name) + " threw an exception that is not an aj::Error: " + e.what(),
            program(aj::print_module(mod)));
  }
  auto problems = aj::verify_problems(out);
  if (!problems.empty())
    finding(std::string(name) + " returned a module that does not verify: " + problems.front(),
            before_and_after(mod, out));
  return out;
}

// The function LiftTransformParams added right after `name` in `out`, or "".
std::string transform_params_of(const std::string& name, const aj::Module& in, const aj::Module& out) {
  const auto& fns = out->functions();
  for (size_t i = 0; i + 1 < fns.size(); ++i)
    if (fns[i].first == name) {
      const std::string& next = fns[i + 1].first;
      bool added = next.rfind(name + "_transform_params", 0) == 0 && !in->contains(next);
      return added ? next : "";
    }
  return "";
}

// Function `name` of `out`, called as `in` calls it: after
// LiftTransformParams, the weights go through its f_transform_params first.
Results run_as_before(const std::string& name, const aj::Module& in, const aj::Module& out, aj::Executable& exe,
                      const std::vector<aj::NDArray>& inputs) {
  std::string transform = transform_params_of(name, in, out);
  if (transform.empty()) return run(exe.get(name), inputs);
  size_t num_input = in->lookup(name)->num_input();
  auto transformed = run(exe.get(transform), {inputs.begin() + num_input, inputs.end()});
  if (!transformed) return std::nullopt;
  std::vector<aj::NDArray> args(inputs.begin(), inputs.begin() + num_input);
  args.insert(args.end(), transformed->begin(), transformed->end());
  return run(exe.get(name), args);
}

bool has_matmul(const aj::FunctionNode& fn) {
  for (const auto& b : fn.bindings())
    if (aj::is_call_of(aj::as<aj::CallNode>(b.value), aj::ops::matmul)) return true;
  return false;
}

// Whether function `name` of `out`, and the function LiftTransformParams
// added for it, are free of matmuls.
bool matmul_free(const std::string& name, const aj::Module& in, const aj::Module& out) {
  std::string transform = transform_params_of(name, in, out);
  return !has_matmul(*out->lookup(name)) && (transform.empty() || !has_matmul(*out->lookup(transform)));
}

// The first functions of `in` without matmuls, where small, run by `in` and by `out`.
void check_same_results(const char* pass, const aj::Module& in, const aj::Module& out, aj::Executable& before,
                        Choices& choices) {
  std::unique_ptr<aj::Executable> after;
  try {
    after = std::make_unique<aj::Executable>(out);
  } catch (const aj::Error& e) {
    finding(std::string(pass) + ": the input builds, the output does not: " + e.what(), before_and_after(in, out));
  }
  size_t functions = 0;
  for (const auto& [name, fn] : in->functions()) {
    if (functions++ == kMaxFunctions) break;
    if (has_matmul(*fn) || !matmul_free(name, in, out)) continue;
    auto inputs = make_inputs(*fn, choices);
    if (!inputs) continue;
    Results want = run(before.get(name), *inputs);
    if (!want) continue;
    Results got = run_as_before(name, in, out, *after, *inputs);
    const std::string where = std::string(pass) + ", function " + name;
    if (!got) finding(where + ": the output refused inputs the input ran on", before_and_after(in, out));
    compare(want, got, where + ", before against after", aj::print_module(in) + "--- output:\n" + aj::print_module(out));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_or_none(text);
  if (!parsed || !aj::well_formed(*parsed) || (*parsed)->functions().empty()) return 0;
  const aj::Module& mod = *parsed;
  std::unique_ptr<aj::Executable> exe;  // the input's, made when a pass first changes it; null if it does not build
  bool built = false;
  Choices choices{std::hash<std::string>{}(text)};
  try {
    for (const auto& [name, pass, exact] : passes()) {
      aj::Module out = run_checked(name, pass, mod);
      if (!exact || out == mod) continue;
      if (!built) {
        built = true;
        try {
          exe = std::make_unique<aj::Executable>(mod);
        } catch (const aj::Error&) {  // a tuple param, say: the passes are checked all the same
        }
      }
      if (exe) check_same_results(name, mod, out, *exe, choices);
    }
    aj::GradientOptions options;
    options.func_name = mod->functions().front().first;
    aj::Module pipeline = run_checked("Gradient", [&](const aj::Module& m) { return aj::gradient(m, options); }, mod);
    for (const auto& [name, pass, exact] : passes()) pipeline = run_checked(name, pass, pipeline);
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {  // passes refusing a module and runs refusing inputs are caught where they run
    finding(std::string("an exception outside a pass or a run: ") + e.what(), program(text));
  }
  return 0;
}
