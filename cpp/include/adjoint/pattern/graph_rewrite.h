// Rewriting what graph patterns match (P.rewrite_bindings, DESIGN.md §5):
// a rewriter maps each match to new values for vars of the function
// ({var: expr}, as TVM's rewrite_bindings does), and each walk applies the
// replacements of all its matches at once.
//
// rewrite_graph, per function, repeated until a walk rewrites nothing:
//   1. Match (pattern/graph.h) and call the rewriter on each match in order.
//   2. Apply the walk's replacements (replace_values): each replaced var
//      keeps its name and must keep its type; its new value is bound in
//      A-normal form where the var was bound, nested calls and tuple items
//      to fresh vars, a value equal to one bound before in this walk once.
//   3. When a new value uses a var bound at or after the binding it
//      replaces, re-order the bindings so that each comes after the
//      bindings of the vars it uses: one depth-first, stable topological
//      sort, linear in the function's size.
//   4. Remove dead bindings.
// Errors name the function and the var: a replacement of another type is a
// TypeInferenceError; replacing a param or a var of no binding, a value
// using a var the function does not define, two values for one var,
// replacements that depend on themselves, walks that never stop
// rewriting, and walks growing the function past 64 times its size plus
// 65536 bindings are TransformErrors. An error leaves the input as it was (it is
// immutable): the rewritten function is built beside it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/pattern/graph.h"

namespace aj {

struct GraphReplacement {
  Var var;     // bound in the function matched
  Expr value;  // any expr over the function's vars; nested calls allowed
};

// What the rewriter of a walk sees besides the match.
struct GraphWalk {
  const std::string& function_name;
  const Function& function;
  const DataflowIndex& index;
};

using GraphRewriter = std::function<std::vector<GraphReplacement>(const GraphMatch&, const GraphWalk&)>;

// fn with what rewriter makes of gp's matches, walk after walk (at most
// max_rounds walks that rewrite); fn itself when nothing matches.
Function rewrite_graph(const Function& fn, const std::string& name, const GraphPattern& gp,
                       const GraphRewriter& rewriter, int max_rounds = 8);
// Every function of mod; mod itself when none changes.
Module rewrite_graph(const Module& mod, const GraphPattern& gp, const GraphRewriter& rewriter, int max_rounds = 8);

// Steps 2 and 3 for one walk's replacements, in order; nullptr when every
// replacement is the value the var already has.
Function replace_values(const Function& fn, const std::string& name, const DataflowIndex& index,
                          const std::vector<GraphReplacement>& replacements);

}  // namespace aj
