// Names in the text format (DESIGN.md §3): the one rule for what the lexer
// reads as a name, [A-Za-z_][A-Za-z0-9_]* in ASCII, and for the Python
// keywords that cannot be a var, param or function name. The lexer, the
// parser, the printer, the verifier and every way a function name enters a
// module (ModuleNode, aj.Module, with_function, aj.FunctionBuilder,
// aj.Function) ask here, so a name they accept is one the parser reads back.
#pragma once

#include <string>
#include <string_view>

namespace aj {

inline bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

// `def`, `return`, `None`, ...: Python's keywords (soft keywords excepted).
bool is_python_keyword(std::string_view s);

// A name the parser reads as a var, param or function name: a name token
// that is not a Python keyword.
bool is_valid_name(std::string_view s);

// Empty when `name` is a valid function name; else a sentence naming it,
// what is wrong with it and what a function name must be: "function name
// 'my-func' holds '-': a function name must be ...".
std::string function_name_problem(std::string_view name);

}  // namespace aj
