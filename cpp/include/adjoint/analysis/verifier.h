// The verifier: checks that a module is well formed. Each var is bound once
// and before use (params count as bound), call args are leaves (A-normal
// form), every expr's type equals what the op rules infer, attrs match their
// op's schema, and num_input is within the param count.
#pragma once

#include <string>
#include <vector>

#include "adjoint/ir/function.h"

namespace aj {

// Every problem found, each naming the function and the var or binding.
std::vector<std::string> verify_problems(const Module& mod);
bool well_formed(const Module& mod);
void verify(const Module& mod);  // throws VerifyError with the first problem

}  // namespace aj
