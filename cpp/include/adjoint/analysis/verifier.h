// The verifier: checks that a module is well formed. Function names are
// names the parser reads (ir/names.h; ModuleNode already refuses others, so
// this is a second guard), each var is bound once and before use (params
// count as bound), call args are leaves (A-normal form), every expr's type
// equals what the op rules infer, attrs match their op's schema, function
// attrs are known ones and num_input is within the param count.
#pragma once

#include <string>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

// How much to check. kFull: everything above. kStructure: all but re-running
// each call's op rules (its type and attrs), which hold for every call made
// through make_call (the builder, the parser, the Python API): a third of
// the cost, and what stands between user-built IR and the passes.
enum class VerifyLevel { kStructure, kFull };

// Every problem found, each naming the function and the var or binding. A
// function that passes a level is marked (FunctionNode::mark_verified: 1
// for kStructure, 2 for kFull) and not walked again at that level or below:
// the pass that checked its input and the binding that handed it over, or
// each pass of a pipeline given the same module, verify it once.
std::vector<std::string> verify_problems(const Module& mod, VerifyLevel level = VerifyLevel::kFull);
bool well_formed(const Module& mod);
void verify(const Module& mod);  // throws VerifyError with the first problem
// What every pass and the executor do first: verify at kStructure, naming
// `user` ("Gradient", "build") in the VerifyError, so malformed IR built
// through the Python API is an error instead of undefined behaviour downstream.
void verify_input(const Module& mod, const std::string& user);

}  // namespace aj
