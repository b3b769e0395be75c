// A coverage-guided (libFuzzer) target for the executor: programs run with
// and without elementwise fusion, which docs/executor.md says give the same
// bits. Each input is a text. A module that parses and verifies is built both
// ways; each function whose values are all small is run by both on the same
// inputs: every symbol bound to 0..3 and the elements drawn from a table of
// plain and extreme values (zeros of both signs, infinities, NaN, int
// limits), chosen by a hash of the text. Both must refuse the inputs
// (aj::Error) or both return results of equal types and bits (any NaN equal
// to any NaN); the fused plan run again must repeat its bits, its buffers
// now coming from the pool. Then the function is planned donating inputs to
// outputs of its type (as JAX's donate_argnums; a choice of such pairs) and
// run on copies of the inputs: the same bits again, each donated copy holding
// its result's bytes, or, if it refuses them, every copy as it was. Another
// exception or a sanitizer report (signed overflow in an int kernel, say) is
// a finding.
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

aj::NDArray copy_of(const aj::NDArray& a) {
  aj::NDArray out(a.shape(), a.dtype());
  if (a.nbytes() > 0) std::memcpy(out.data(), a.data(), a.nbytes());
  return out;
}

void run_donating(const std::string& name, aj::Executable& fused, const std::vector<aj::NDArray>& inputs,
                  const Results& want, Choices& choices, const std::string& text) {
  std::vector<aj::Alias> aliases = choose_aliases(*fused.get(name).function(), choices);
  if (aliases.empty()) return;
  auto donating = fused.donating(name, aliases);
  std::vector<aj::NDArray> copies;
  for (const auto& a : inputs) copies.push_back(copy_of(a));
  auto got = run(*donating, copies);
  const std::string what = name + ", donating " + std::to_string(aliases.size()) + " input(s)";
  if (!got) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_bits(copies[i], inputs[i])) finding(what + ": a run that refused changed input " + std::to_string(i), program(text));
    return;
  }
  compare(want, got, what, text);
  for (const auto& alias : aliases)
    if ((*got)[alias.output].data() != copies[alias.param].data() && (*got)[alias.output].nbytes() > 0)
      finding(what + ": result " + std::to_string(alias.output) + " is not in input " + std::to_string(alias.param) + "'s bytes", program(text));
}

void run_function(const std::string& name, aj::Executable& fused, aj::Executable& unfused, Choices& choices,
                  const std::string& text) {
  auto inputs = make_inputs(*fused.get(name).function(), choices);
  if (!inputs) return;
  auto first = run(fused.get(name), *inputs);
  compare(first, run(unfused.get(name), *inputs), name + ", fused against fuse=False", text);
  compare(first, run(fused.get(name), *inputs), name + ", fused run twice", text);
  run_donating(name, fused, *inputs, first, choices, text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Choices choices{std::hash<std::string>{}(text)};
  try {
    aj::Module mod = aj::parse_module(text);
    if (!aj::well_formed(mod)) return 0;
    aj::Executable fused(mod, true), unfused(mod, false);
    size_t functions = 0;
    for (const auto& [name, fn] : mod->functions())
      if (functions++ < 4) run_function(name, fused, unfused, choices, text);
  } catch (const aj::Error&) {
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not an aj::Error: ") + e.what(), program(text));
  }
  return 0;
}
