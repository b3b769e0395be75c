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
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/support/error.h"

namespace {

constexpr int64_t kMaxElements = int64_t{1} << 16;  // per value: the runs stay fast
using Env = std::map<std::string, int64_t>;

[[noreturn]] void finding(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "exec_fuzzer: %s\n--- program:\n%s\n", what.c_str(), text.c_str());
  std::abort();
}

// A deterministic stream of choices from the text's hash.
struct Choices {
  uint64_t state;
  uint64_t next() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  template <typename T, size_t N> T pick(const T (&table)[N]) { return table[next() % N]; }
};

// The elements of `type`'s values with `env`, or nullopt when a dim is not
// known or a value has more than kMaxElements. A negative dim counts as 0:
// the executor is to refuse it.
std::optional<int64_t> largest_value(const aj::Type& type, const Env& env) {
  if (type->is_tuple()) {
    int64_t most = 0;
    for (const auto& field : type->fields()) {
      auto n = largest_value(field, env);
      if (!n) return std::nullopt;
      most = std::max(most, *n);
    }
    return most;
  }
  int64_t n = 1;
  for (const auto& dim : type->shape()) {
    auto value = dim.evaluate(env);
    if (!value) return std::nullopt;
    n *= std::max<int64_t>(*value, 0);
    if (n > kMaxElements) return std::nullopt;
  }
  return n;
}

bool small_enough(const aj::FunctionNode& fn, const Env& env) {
  for (const auto& p : fn.params())
    if (!p->type()->is_tensor() || !largest_value(p->type(), env)) return false;
  for (const auto& b : fn.bindings())
    if (!largest_value(b.var->type(), env)) return false;
  return true;
}

void fill(aj::NDArray& a, Choices& choices) {
  static const double kFloats[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, 1e30, -1e-30,
                                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(), 1e300};
  static const int64_t kInts[] = {0, 1, -1, 2, 3, -3, 7, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()};
  for (int64_t i = 0; i < a.numel(); ++i) {
    switch (a.dtype()) {
      case aj::DType::kFloat32: a.data_as<float>()[i] = static_cast<float>(choices.pick(kFloats)); break;
      case aj::DType::kFloat64: a.data_as<double>()[i] = choices.pick(kFloats); break;
      case aj::DType::kInt32: a.data_as<int32_t>()[i] = static_cast<int32_t>(choices.pick(kInts)); break;
      case aj::DType::kInt64: a.data_as<int64_t>()[i] = choices.pick(kInts); break;
      case aj::DType::kBool: a.data_as<uint8_t>()[i] = choices.next() & 1; break;
    }
  }
}

bool same_bits(const aj::NDArray& a, const aj::NDArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t width = aj::dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * width, pb + i * width, width) == 0) continue;
    bool both_nan = a.dtype() == aj::DType::kFloat32 ? std::isnan(a.data_as<float>()[i]) && std::isnan(b.data_as<float>()[i])
                  : a.dtype() == aj::DType::kFloat64 ? std::isnan(a.data_as<double>()[i]) && std::isnan(b.data_as<double>()[i])
                                                     : false;
    if (!both_nan) return false;
  }
  return true;
}

// The run's results, or nullopt when it refused the inputs.
std::optional<std::vector<aj::NDArray>> run(aj::CompiledFunction& fn, const std::vector<aj::NDArray>& inputs) {
  try {
    return fn.run(inputs);
  } catch (const aj::Error&) {
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  }
}

void compare(const std::optional<std::vector<aj::NDArray>>& a, const std::optional<std::vector<aj::NDArray>>& b,
             const std::string& what, const std::string& text) {
  if (a.has_value() != b.has_value()) finding(what + ": one run refused the inputs, the other did not", text);
  if (!a) return;
  if (a->size() != b->size()) finding(what + ": different numbers of results", text);
  for (size_t i = 0; i < a->size(); ++i)
    if (!same_bits((*a)[i], (*b)[i])) finding(what + ": result " + std::to_string(i) + " differs", text);
}

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
                  const std::optional<std::vector<aj::NDArray>>& want, Choices& choices, const std::string& text) {
  std::vector<aj::Alias> aliases = choose_aliases(*fused.get(name).function(), choices);
  if (aliases.empty()) return;
  auto donating = fused.donating(name, aliases);
  std::vector<aj::NDArray> copies;
  for (const auto& a : inputs) copies.push_back(copy_of(a));
  auto got = run(*donating, copies);
  const std::string what = name + ", donating " + std::to_string(aliases.size()) + " input(s)";
  if (!got) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_bits(copies[i], inputs[i])) finding(what + ": a run that refused changed input " + std::to_string(i), text);
    return;
  }
  compare(want, got, what, text);
  for (const auto& alias : aliases)
    if ((*got)[alias.output].data() != copies[alias.param].data() && (*got)[alias.output].nbytes() > 0)
      finding(what + ": result " + std::to_string(alias.output) + " is not in input " + std::to_string(alias.param) + "'s bytes", text);
}

void run_function(const std::string& name, aj::Executable& fused, aj::Executable& unfused, Choices& choices,
                  const std::string& text) {
  const aj::FunctionNode& fn = *fused.get(name).function();
  Env env;
  for (const auto& p : fn.params())
    if (p->type()->is_tensor())
      for (const auto& dim : p->type()->shape())
        for (const auto& symbol : dim.symbols()) env.emplace(symbol, static_cast<int64_t>(choices.next() % 4));
  if (!small_enough(fn, env)) return;
  std::vector<aj::NDArray> inputs;
  for (const auto& p : fn.params()) {
    std::vector<int64_t> shape;
    for (const auto& dim : p->type()->shape()) shape.push_back(std::max<int64_t>(*dim.evaluate(env), 0));
    inputs.emplace_back(shape, p->type()->dtype());
    fill(inputs.back(), choices);
  }
  auto first = run(fused.get(name), inputs);
  compare(first, run(unfused.get(name), inputs), name + ", fused against fuse=False", text);
  compare(first, run(fused.get(name), inputs), name + ", fused run twice", text);
  run_donating(name, fused, inputs, first, choices, text);
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
    finding(std::string("an exception that is not an aj::Error: ") + e.what(), text);
  }
  return 0;
}
