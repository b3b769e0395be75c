// A coverage-guided (libFuzzer) target for the text format: the C++ side of
// `python -m adjoint.fuzz parse`, which mutates texts at random; this one
// steers its mutations by the parser's branch coverage. Each input is a text:
// whatever parses must print, parse back to a structurally equal module of
// equal hash whose print is the same text, and, if it verifies, build.
// Parsing and building may refuse with an aj::Error (what Python sees as
// aj.Error), and anything may run out of memory (std::bad_alloc,
// OutOfMemoryError); any other exception, an error from printing, comparing
// or verifying what parsed, and every sanitizer report, is a finding.
// Built by CMake with -DADJOINT_LIBFUZZER=ON and clang (README, "Fuzzing").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "adjoint/analysis/verifier.h"
#include "adjoint/ir/parser.h"
#include "adjoint/ir/printer.h"
#include "adjoint/ir/structural.h"
#include "adjoint/runtime/executor.h"
#include "adjoint/support/error.h"
#include "fuzz_run.h"

namespace {

using aj::fuzz::finding;
using aj::fuzz::program;

void check_round_trip(const aj::Module& mod) {
  std::string printed = aj::print_module(mod);
  aj::Module again;
  try {
    again = aj::parse_module(printed);
  } catch (const aj::Error& e) {
    finding("the printed module does not parse", std::string(e.what()) + "\n--- printed:\n" + printed);
  }
  if (auto diff = aj::structural_diff(mod, again))
    finding("parse(print(m)) differs from m", *diff + "\n--- printed:\n" + printed);
  if (aj::print_module(again) != printed) finding("print(parse(print(m))) != print(m)", printed);
  if (aj::structural_hash(mod) != aj::structural_hash(again)) finding("equal modules of different hash", printed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = aj::fuzz::parse_or_none(text);
  if (!parsed) return 0;
  const aj::Module& mod = *parsed;
  try {  // what parses prints, compares, hashes and verifies without an error
    check_round_trip(mod);
    if (!aj::well_formed(mod)) return 0;
  } catch (const std::bad_alloc&) {
    return 0;
  } catch (const std::exception& e) {
    finding(std::string("printing, comparing or verifying a parsed module threw: ") + e.what(), program(text));
  }
  try {
    aj::Executable exe(mod);
  } catch (const aj::Error&) {
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {
    finding(std::string("building threw an exception that is not an aj::Error: ") + e.what(), program(text));
  }
  return 0;
}
