// A coverage-guided (libFuzzer) target for the executor: programs run with
// and without elementwise fusion, which docs/executor.md says give the same
// bits. Each input is a text. A module that parses and verifies is built both
// ways; each function whose values are all small is run by both on the same
// inputs: every symbol bound to 0..3 and the elements drawn from a table of
// plain and extreme values (zeros of both signs, infinities, NaN, int
// limits), chosen by a hash of the text. Both must refuse the inputs
// (aj::Error) or both return results of equal types and bits (any NaN equal
// to any NaN); the fused plan run again must repeat its bits, its buffers
// now coming from the pool; no run may change its inputs. Then the function
// is planned, fused and not, donating inputs to outputs of their type (as
// JAX's donate_argnums; a choice of such pairs) and run on copies of the
// inputs: the same bits again, each donated copy holding its result and the
// others unchanged, or, if the run without donation refused them too, every
// copy as it was. The first kMaxFunctions functions are run (fuzz_run.h).
// Another exception or a sanitizer report (signed overflow in an int kernel,
// say) is a finding.
// Built by CMake with -DADJOINT_LIBFUZZER=ON and clang (README, "Fuzzing").
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/parser.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/support/error.h"
#include "fuzz_run.h"

namespace {

using namespace aj::fuzz;

void flatten(const aj::Type& type, std::vector<aj::Type>& out) {
  if (type->is_tuple())
    for (const auto& field : type->fields()) flatten(field, out);
  else
    out.push_back(type);
}

// Pairs (param, flat output) of one type, each param and output in one at
// most, some left out by choice.
std::vector<aj::Alias> choose_aliases(const aj::FunctionNode& fn, Choices& choices) {
  std::vector<aj::Type> outputs;
  flatten(fn.ret_type(), outputs);
  std::vector<bool> taken(outputs.size(), false);
  std::vector<aj::Alias> aliases;
  for (size_t param = 0; param < fn.params().size(); ++param) {
    if (choices.next() % 3 == 0) continue;
    for (size_t output = 0; output < outputs.size(); ++output) {
      if (taken[output] || !aj::type_equal(fn.params()[param]->type(), outputs[output])) continue;
      taken[output] = true;
      aliases.push_back({param, output});
      break;
    }
  }
  return aliases;
}

void run_donating(const std::string& plan, const std::string& name, aj::Executable& exe,
                  const std::vector<aj::Alias>& aliases, const std::vector<aj::NDArray>& inputs, const Results& want,
                  const std::string& text) {
  const std::string what = name + ", " + plan + ", donating " + std::to_string(aliases.size()) + " input(s)";
  std::unique_ptr<aj::CompiledFunction> donating;
  try {
    donating = exe.donating(name, aliases);
  } catch (const aj::Error& e) {
    finding(what + ": aliases of params to outputs of their type refused: " + e.what(), program(text));
  }
  std::vector<aj::NDArray> copies = copies_of(inputs);
  Results got = run(*donating, copies);
  if (!got) {
    if (want) finding(what + ": refused inputs the run without donation took", program(text));
    check_unchanged(copies, inputs, what + ": a run that refused", text);
    return;
  }
  compare(want, got, what, text);
  std::vector<bool> donated(inputs.size(), false);
  for (const auto& alias : aliases) {
    donated[alias.param] = true;
    if (!same_bits(copies[alias.param], (*want)[alias.output]))
      finding(what + ": donated input " + std::to_string(alias.param) + " does not hold result " +
                  std::to_string(alias.output),
              program(text));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!donated[i] && !same_bits(copies[i], inputs[i]))
      finding(what + ": input " + std::to_string(i) + ", not donated, changed", program(text));
}

void run_function(const std::string& name, aj::Executable& fused, aj::Executable& unfused, Choices& choices,
                  const std::string& text) {
  const aj::FunctionNode& fn = *fused.get(name).function();
  auto inputs = make_inputs(fn, choices);
  if (!inputs) return;
  const std::vector<aj::NDArray> pristine = copies_of(*inputs);
  Results first = run(fused.get(name), *inputs);
  compare(first, run(unfused.get(name), *inputs), name + ", fused against fuse=False", text);
  compare(first, run(fused.get(name), *inputs), name + ", fused run twice", text);
  check_unchanged(*inputs, pristine, name + ": a run", text);
  std::vector<aj::Alias> aliases = choose_aliases(fn, choices);
  if (aliases.empty()) return;
  run_donating("fused", name, fused, aliases, *inputs, first, text);
  run_donating("fuse=False", name, unfused, aliases, *inputs, first, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_or_none(text);
  if (!parsed || !aj::well_formed(*parsed)) return 0;
  const aj::Module& mod = *parsed;
  std::unique_ptr<aj::Executable> fused, unfused;
  try {
    fused = std::make_unique<aj::Executable>(mod, true);
  } catch (const aj::Error&) {
    return 0;
  } catch (const std::bad_alloc&) {
    return 0;
  }
  Choices choices{std::hash<std::string>{}(text)};
  try {
    try {
      unfused = std::make_unique<aj::Executable>(mod, false);
    } catch (const aj::Error& e) {
      finding(std::string("the module builds with fusion, not without: ") + e.what(), program(text));
    }
    size_t functions = 0;
    for (const auto& [name, fn] : mod->functions())
      if (functions++ < kMaxFunctions) run_function(name, *fused, *unfused, choices, text);
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {  // runs refusing inputs are caught in run(); nothing else may throw
    finding(std::string("an exception outside a run: ") + e.what(), program(text));
  }
  return 0;
}
