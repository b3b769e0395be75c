// Replacing bindings of a function by blocks of new ones, and ordering a
// list of bindings by their dependences: for passes whose new bindings
// replace several old ones at once (a value that replaces several bindings
// goes where the last of them was; the uses of the others then have to wait
// for it). A var is a dependence of a binding when its value uses the var
// and the list binds it; params and vars the list does not bind are not.
//
//   - replace_bindings: the function with each block in place of the
//     bindings it replaces, where the last of them was; when that puts a
//     use before its binding (only uses of the vars a block binds anew can
//     be: a look at their users), the stable dependency order below. Blocks
//     that together form a cycle (one's operands computed from another's
//     results and the other way round) are left out, their bindings kept,
//     and the order taken again.
//   - stable_dependency_order: each binding goes after the bindings it
//     depends on and otherwise keeps its place: walk the list in order and
//     put each binding down after its not yet placed dependences, deps
//     first (one depth-first walk, with an explicit stack). When the
//     bindings are already in dependency order, that order is returned.
//   - bindings_on_cycles: when no order exists, which bindings stand in the
//     way: those that cannot be placed either from the sources (Kahn's
//     algorithm on uses) or from the sinks (on dependences). Every cycle
//     lies in that set; so may bindings both downstream of one cycle and
//     upstream of another.
// The last two take any list of bindings (not only a function's); all
// three are linear in the size of the values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "adjoint/analysis/dataflow.h"
#include "adjoint/ir/function.h"

namespace aj {

// New bindings that stand for some bindings of a function: they use only
// what the replaced ones used and their own vars, and bind anew each var of
// the replaced ones that anything else uses.
struct BindingBlock {
  std::vector<Binding> bindings;
  std::vector<int64_t> replaced;  // positions in the function
};

// index.function() with the blocks in place (see above); the same function
// when there are none. Leaving out the blocks on cycles leaves no cycle (a
// cycle through kept bindings alone would be one of the function's own);
// a TransformError if one is left all the same. `applied`, when given, gets
// 1 for each block put in and 0 for each left out.
Function replace_bindings(const DataflowIndex& index, const std::vector<BindingBlock>& blocks,
                          std::vector<uint8_t>* applied = nullptr);

// Positions into `bindings` in the order described above; nullopt when the
// dependences form a cycle.
std::optional<std::vector<uint32_t>> stable_dependency_order(const std::vector<Binding>& bindings);

// 1 for each binding that no dependency order can place (see above).
std::vector<uint8_t> bindings_on_cycles(const std::vector<Binding>& bindings);

}  // namespace aj
