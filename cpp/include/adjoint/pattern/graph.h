// Graph patterns (P.PatternContext, DESIGN.md §5): several root patterns
// matched at once, each to a binding of its own in one function, tied
// together by the sub-patterns they share and by use edges. Three matmuls
// sharing one LHS (the Q, K and V projections) are the classic case; a
// repeated root matches any number of such branches.
//
//   - A root matches the value of one binding, seeing through bindings as
//     pattern/match.h does. A repeated root matches one or more bindings,
//     its branches, in binding order.
//   - A capture name that two roots capture, or that an edge names inside a
//     repeated root, is shared: it stands for one value in a match (vars by
//     identity, other values by content, as cse::value_equal compares them)
//     among the roots and branches that captured it; one whose match left
//     it out (a side of `|` it is not on, under `~`) puts no bound on it.
//     The other names of a repeated root take one value per branch.
//   - An edge (from, to, index) holds when from's value is to's operand
//     `index` (any operand for -1; a field of a tuple operand counts). With
//     `only`, every use of from's value is moreover by to's bindings, and
//     the function does not return it. An end's value is what the roots
//     that capture it captured; it is checked once all of them are
//     assigned, and an end they all left out fails it.
//   - What a root's own binding value was captured as is reported as the
//     binding's var (reported_capture): the var is how the rest of the
//     function refers to that value.
//
// Matching, one walk (match_graph):
//   0. The roots are searched in the order they were made, except that a
//      repeated root no earlier root ties to (by a shared name or an edge)
//      waits for the first later plain root an edge ties it to, and comes
//      right after it: its branches are then found through that root.
//   1. Each root is tried on each binding's value (only calls of its root's
//      ops, when it has some); each match is a candidate, which keeps the
//      values of the root's shared and edge names.
//   2. The candidates of root i are filed in hash buckets keyed by the values
//      of its shared names that roots searched before it capture (for a
//      repeated root: all its shared names); a candidate that left one of
//      them out goes on a list of its own, tried beside every bucket, and
//      when the earlier roots left one out the search tries every candidate.
//   3. For each free candidate of the first root searched, in binding order,
//      a depth-first search picks for each next root a free candidate from
//      the bucket the earlier roots' values select, or, when no shared name
//      ties it to them, from the users of the source of an edge into it, or
//      the operands of the target of an edge out of it (the edge's end
//      being the root itself), checking the edges whose later end it is; a
//      repeated root takes every candidate from there that fits, and a later
//      root tied to it by an edge narrows it to the branches that edge holds
//      for. A complete assignment is a match, and its bindings are taken for
//      the rest of the walk (a binding is in at most one match).
//  3a. Plain roots that are alike (the same pattern but for names no other
//      root captures and no edge names, which may differ as long as one
//      stands for the other throughout), with no repeated root and no root
//      with edges searched between them (a run takes every free binding
//      that fits, and an edge may narrow an earlier run, so those would see
//      which one the first took), can swap the bindings of any
//      match, so the search takes bindings for them in binding order only,
//      and gives up on a candidate when too few candidates come after it
//      for the alike roots still to place: k such roots on k - 1 fitting
//      bindings fail at once instead of after (k - 1)! tries. The matches
//      found are the same: the search meets each match's ordered form
//      first.
// Each bucket steps over its taken candidates once, and an edge gives the
// few candidates its other end's bindings use or are used by, so when
// shared names or edges tie each root to those before it (the QKV case:
// the matmuls of one LHS) a walk is linear in the size of the function.
// Roots tied by nothing may try many candidates of later roots per
// candidate of the first, unless they are alike (step 3a).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/pattern/match.h"

namespace aj {

class DataflowIndex;

struct GraphRoot {
  Pattern pattern;        // matches the value of a binding; not a run
  bool repeated = false;  // one or more bindings (branches)
};

struct GraphEdge {
  std::string from, to;  // capture names
  int index = -1;        // to's operand; -1: any
  bool only = false;     // every use of from's value is by to's bindings
};

struct GraphRootNames;  // the names a root captures (graph.cc)

// The checked roots and edges, and the plan matching follows (which names
// each root keeps, its bucket key, its edges).
class GraphPattern {
 public:
  // An aj::Error naming the problem: no root can match a call, an edge names
  // a capture no root makes, a shared name sits in a run.
  GraphPattern(std::vector<GraphRoot> roots, std::vector<GraphEdge> edges);

  // In the order they were made, as GraphMatch reports them.
  const std::vector<GraphRoot>& roots() const { return roots_; }
  const std::vector<GraphEdge>& edges() const { return edges_; }
  // The roots in the order they are searched (step 0): made index by place.
  const std::vector<uint32_t>& order() const { return order_; }
  const GraphRoot& searched(uint32_t place) const { return roots_[order_[place]]; }
  // Whether `name` stands for one value in a match (see the file comment).
  bool is_shared(const std::string& name) const;
  // "roots: [matmul(x, _), ...]; edges: [a -> b (arg 0)]".
  std::string to_string() const;

  // Where a name's value is found: the root that captures it first (its
  // place in the search order), and its slot among the values that root's
  // candidates keep.
  struct NameSource {
    uint32_t root;
    uint32_t slot;
  };
  struct RootPlan {
    std::vector<OpId> ops;              // the ops a binding's call must have (empty: any value)
    std::vector<std::string> kept;      // names whose values candidates keep, by slot
    std::vector<std::vector<const PatternNode*>> kept_nodes;  // by slot: the root's nodes of that name
    std::vector<uint32_t> key_slots;    // the bucket key: slots of kept
    // For each key slot, where the partial match holds its value: the
    // earlier roots that capture the name, in search order, and for a
    // repeated root its own branches held so far; the first value found
    // there is the one a candidate must agree with.
    std::vector<std::vector<NameSource>> key_sources;
    bool key_fixed = true;              // every key name is captured by earlier roots
    std::vector<uint32_t> edges;        // the edges checked when this root is assigned
    int users_edge = -1;                // an edge into this root whose source's users give candidates
    int operands_edge = -1;             // an edge out of this root whose target's operands give candidates
    // Alike plain roots (step 3a): the place of the last plain root before
    // this one alike to it (-1: none), and how many come after it.
    int alike_before = -1;
    uint32_t alike_after = 0;
  };
  // By place in the search order.
  const std::vector<RootPlan>& plans() const { return plans_; }
  // Where the values of each edge's ends are kept: every root that
  // captures the name, in search order. By edge.
  struct EdgeSources {
    std::vector<NameSource> from, to;
  };
  const std::vector<EdgeSources>& edge_sources() const { return edge_sources_; }

 private:
  void plan();
  std::vector<std::string> edge_names(const std::vector<GraphRootNames>& names) const;
  void find_shared(const std::vector<GraphRootNames>& names, const std::vector<std::string>& edge_names);
  void plan_kept(uint32_t r, const std::vector<GraphRootNames>& names, const std::vector<std::string>& edge_ends);
  void plan_key_and_edges(uint32_t r, const std::vector<GraphRootNames>& names);
  void plan_alike(const std::vector<GraphRootNames>& names, const std::vector<std::string>& edge_ends);
  std::vector<NameSource> sources_before(uint32_t place, const std::string& name) const;

  std::vector<GraphRoot> roots_;
  std::vector<GraphEdge> edges_;
  std::vector<uint32_t> order_;
  std::vector<std::string> shared_;  // sorted
  std::vector<RootPlan> plans_;
  std::vector<EdgeSources> edge_sources_;
};

// One match: per root, the bindings of its branches (positions in the
// function, in order: one for a plain root) and what the root's pattern
// captured on each.
struct GraphMatch {
  std::vector<std::vector<uint32_t>> bindings;
  std::vector<std::vector<Match>> captures;
};

// The nodes of p, outside its runs, by the name they capture, each once, in
// the order a depth-first walk first meets them (what a match captured under
// a name is found by node, without comparing names). One walk over the
// distinct nodes: a node shared by several paths is visited once.
std::unordered_map<std::string, std::vector<const PatternNode*>> nodes_by_name(const Pattern& p);

// A capture as reported: the binding's var when it is the binding's value
// itself, else the expr as written.
Expr reported_capture(const Expr& captured, const Binding& binding);

// The disjoint matches of gp among the bindings of index's function, in the
// binding order of their first root's first branch (the first root made). The matches refer into
// the function, gp and `bindings` (the matcher's view, which must read
// index): valid while those live.
std::vector<GraphMatch> match_graph(const GraphPattern& gp, const DataflowIndex& index, const Bindings& bindings);

}  // namespace aj
