// What the libFuzzer targets of this folder share: how a finding is
// reported (to stderr, then abort, which libFuzzer saves as a crash), and
// how a function is run on inputs chosen from a hash of the text (every
// symbol bound to 0..3, elements drawn from plain and extreme values), with
// results compared bit for bit (any NaN equal to any NaN). Header only: each
// target is one translation unit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "adjoint/analysis/flops.h"
#include "adjoint/ir/function.h"
#include "adjoint/ir/parser.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/support/error.h"

namespace aj::fuzz {

[[noreturn]] inline void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

// A finding's detail: the input it came from.
inline std::string program(const std::string& text) { return "--- program:\n" + text; }

// The module `text` holds, or nullopt when the parser refuses it (an
// aj::Error) or memory runs out; any other exception is a finding.
inline std::optional<Module> parse_or_none(const std::string& text) {
  try {
    return parse_module(text);
  } catch (const Error&) {
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    finding(std::string("parsing threw an exception that is not an aj::Error: ") + e.what(), program(text));
  }
}

// A deterministic stream of choices (splitmix64), seeded by the text's hash.
struct Choices {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  template <typename T, size_t N> T pick(const T (&table)[N]) { return table[next() % N]; }
};

constexpr int64_t kMaxElements = int64_t{1} << 16;  // per value: the runs stay fast
constexpr int64_t kMaxFlops = int64_t{1} << 26;     // per run (analysis/flops.h)
constexpr size_t kMaxFunctions = 4;                 // the functions of a module that run: its first ones
using Env = std::map<std::string, int64_t>;

// The elements of the largest value of `type` with `env`, or nullopt when a
// dim is not known or a value has more than kMaxElements. A negative dim
// counts as 0: the executor is to refuse it.
inline std::optional<int64_t> largest_value(const Type& type, const Env& env) {
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
    if (*value <= 0) return 0;
    if (*value > kMaxElements / n) return std::nullopt;
    n *= *value;
  }
  return n;
}

inline void fill(NDArray& a, Choices& choices) {
  static const double kFloats[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, 1e30, -1e-30,
                                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(), 1e300};
  static const int64_t kInts[] = {0, 1, -1, 2, 3, -3, 7, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()};
  for (int64_t i = 0; i < a.numel(); ++i) {
    switch (a.dtype()) {
      case DType::kFloat32: a.data_as<float>()[i] = static_cast<float>(choices.pick(kFloats)); break;
      case DType::kFloat64: a.data_as<double>()[i] = choices.pick(kFloats); break;
      case DType::kInt32: a.data_as<int32_t>()[i] = static_cast<int32_t>(choices.pick(kInts)); break;
      case DType::kInt64: a.data_as<int64_t>()[i] = choices.pick(kInts); break;
      case DType::kBool: a.data_as<uint8_t>()[i] = choices.next() & 1; break;
    }
  }
}

// Inputs for `fn`, or nullopt when a param is a tuple, a value of fn would
// be too large (or of a dim no param's symbols give), or its FLOP count is
// past kMaxFlops (a convolution of small values can still take long).
inline std::optional<std::vector<NDArray>> make_inputs(const FunctionNode& fn, Choices& choices) {
  Env env;
  for (const auto& p : fn.params()) {
    if (!p->type()->is_tensor()) return std::nullopt;
    for (const auto& dim : p->type()->shape())
      for (const auto& symbol : dim.symbols()) env.emplace(symbol, static_cast<int64_t>(choices.next() % 4));
  }
  try {  // a dim evaluated or a FLOP count may overflow int64
    for (const auto& p : fn.params())
      if (!largest_value(p->type(), env)) return std::nullopt;
    for (const auto& b : fn.bindings())
      if (!largest_value(b.var->type(), env)) return std::nullopt;
    auto flops = count_flops(fn, false, env).total.as_const();
    if (!flops || *flops > kMaxFlops) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  std::vector<NDArray> inputs;
  for (const auto& p : fn.params()) {
    std::vector<int64_t> shape;
    for (const auto& dim : p->type()->shape()) shape.push_back(std::max<int64_t>(*dim.evaluate(env), 0));
    inputs.emplace_back(shape, p->type()->dtype());
    fill(inputs.back(), choices);
  }
  return inputs;
}

inline NDArray copy_of(const NDArray& a) {
  NDArray out(a.shape(), a.dtype());
  if (a.nbytes() > 0) std::memcpy(out.data(), a.data(), a.nbytes());
  return out;
}

inline std::vector<NDArray> copies_of(const std::vector<NDArray>& arrays) {
  std::vector<NDArray> out;
  for (const auto& a : arrays) out.push_back(copy_of(a));
  return out;
}

inline bool same_bits(const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t width = dtype_size(a.dtype());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(pa + i * width, pb + i * width, width) == 0) continue;
    bool both_nan = a.dtype() == DType::kFloat32   ? std::isnan(a.data_as<float>()[i]) && std::isnan(b.data_as<float>()[i])
                    : a.dtype() == DType::kFloat64 ? std::isnan(a.data_as<double>()[i]) && std::isnan(b.data_as<double>()[i])
                                                   : false;
    if (!both_nan) return false;
  }
  return true;
}

// A finding unless `now` holds the bits of `before`, array by array (the
// inputs of a run, which reads them in place and writes none it was not given).
inline void check_unchanged(const std::vector<NDArray>& now, const std::vector<NDArray>& before,
                            const std::string& what, const std::string& text) {
  for (size_t i = 0; i < now.size(); ++i)
    if (!same_bits(now[i], before[i])) finding(what + " changed input " + std::to_string(i), program(text));
}

using Results = std::optional<std::vector<NDArray>>;  // nullopt: the run refused its inputs

inline Results run(CompiledFunction& fn, const std::vector<NDArray>& inputs) {
  try {
    return fn.run(inputs);
  } catch (const Error&) {
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  }
}

// A finding unless both runs refused or both gave results of the same bits.
inline void compare(const Results& a, const Results& b, const std::string& what, const std::string& text) {
  if (a.has_value() != b.has_value()) finding(what + ": one run refused the inputs, the other did not", program(text));
  if (!a) return;
  if (a->size() != b->size()) finding(what + ": different numbers of results", program(text));
  for (size_t i = 0; i < a->size(); ++i)
    if (!same_bits((*a)[i], (*b)[i])) finding(what + ": result " + std::to_string(i) + " differs", program(text));
}

}  // namespace aj::fuzz
