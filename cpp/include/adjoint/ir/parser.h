// The parser of the text format (DESIGN.md §3; canonical form in printer.h).
// Accepts everything the printer prints, plus: missing binding annotations
// (inferred), nested calls (normalized into bindings with generated names),
// comments and blank lines, positional or keyword attrs, single ints for
// axis lists. Every error is a ParseError (syntax, names) or a
// TypeInferenceError (shapes, dtypes, attrs) carrying line, column and the
// offending source line; what() is "line:col: reason\n<source line>\n<caret>".
#pragma once

#include <string>

#include "adjoint/ir/function.h"

namespace aj {

Module parse_module(const std::string& text);

}  // namespace aj
