// A coverage-guided (libFuzzer) target for the passes: the C++ side of
// `python -m adjoint.fuzz passes`, steered by the passes' branch coverage.
// Each input is a text; a module that parses and verifies goes through every
// pass, and through a pipeline of them (Gradient first when it applies, each
// pass taking the previous one's output). A pass may refuse its input with an
// aj::Error (Gradient of a function without a float scalar result, say);
// what it returns must verify fully. Anything else that comes out, and every
// sanitizer report, is a finding. Whether the output computes what the input
// computed is the Python target's check: it runs both.
// Built by CMake with -DADJOINT_LIBFUZZER=ON and clang (docs/testing.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/analysis/verifier.h"
#include "adjoint/autodiff/gradient.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/support/error.h"
#include "adjoint/transform/convert_dtype.h"
#include "adjoint/transform/passes.h"

namespace {

using Pass = std::function<aj::Module(const aj::Module&)>;

const std::vector<std::pair<const char*, Pass>>& passes() {
  static const std::vector<std::pair<const char*, Pass>> all = {
      {"DeadCodeElimination", [](const aj::Module& m) { return aj::dead_code_elimination(m); }},
      {"EliminateCommonSubexpr", [](const aj::Module& m) { return aj::eliminate_common_subexpr(m); }},
      {"SimplifyGradient", [](const aj::Module& m) { return aj::simplify_gradient(m); }},
      {"CombineParallelMatmul", [](const aj::Module& m) { return aj::combine_parallel_matmul(m); }},
      {"ReorderPermuteDimsAfterConcat", [](const aj::Module& m) { return aj::reorder_permute_dims_after_concat(m); }},
      {"LiftTransformParams", [](const aj::Module& m) { return aj::lift_transform_params(m); }},
      {"ReassociateMatmul", [](const aj::Module& m) { return aj::reassociate_matmul(m); }},
      {"ConvertDType", [](const aj::Module& m) { return aj::convert_dtype(m, aj::DType::kFloat64, aj::DType::kFloat32); }},
  };
  return all;
}

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "passes_fuzzer: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
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
    finding(std::string(name) + " threw an exception that is not an aj::Error: " + e.what(), aj::print_module(mod));
  }
  auto problems = aj::verify_problems(out);
  if (!problems.empty())
    finding(std::string(name) + " returned a module that does not verify: " + problems.front(),
            "--- input:\n" + aj::print_module(mod) + "--- output:\n" + aj::print_module(out));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aj::Module mod;
  try {
    mod = aj::parse_module(std::string(reinterpret_cast<const char*>(data), size));
    if (!aj::well_formed(mod) || mod->functions().empty()) return 0;
  } catch (const aj::Error&) {
    return 0;
  } catch (const std::bad_alloc&) {
    return 0;
  }
  for (const auto& [name, pass] : passes()) run_checked(name, pass, mod);
  aj::GradientOptions options;
  options.func_name = mod->functions().front().first;
  aj::Module pipeline = run_checked("Gradient", [&](const aj::Module& m) { return aj::gradient(m, options); }, mod);
  for (const auto& [name, pass] : passes()) pipeline = run_checked(name, pass, pipeline);
  return 0;
}
