// What the matcher (match.cc) remembers inside the sides that `|` and `~`
// may drop, so that a sub-pattern both sides use is matched once:
//
//   - MemoTable: the result of matching a node on an expr, by the node, the
//     expr and the matcher's state (or by node and expr alone for a private
//     node: see below), emptied in constant time at each match.
//   - RememberedNodes: the nodes of a root pattern worth remembering: those
//     two operands lead to (a pattern object used twice), which the walk
//     may meet twice in one state, and the private ones, whose matching
//     does not depend on what was captured before once their own name is
//     free: the node is named, every path from the root into what it
//     contains goes through it (it dominates its sub-patterns), and each
//     name below it belongs to one node of the root. Found with the
//     dominator tree of the pattern's DAG: idom(q) is the closest common
//     dominator of q's parents, and p dominates all below it when the common
//     dominator of p and all its descendants is p. Any other node is met
//     again only when a node above it is, and the memo answers there.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "adjoint/pattern/match.h"

namespace aj::match_detail {

// The state a node is matched in: the trail's top entry names the whole
// trail, the runs' top names all runs. A private node's key has kNone there.
struct MemoKey {
  const PatternNode* pattern;
  const Expr* expr;
  uint32_t top, run_top, scope, scope_begin, next_scope;
  bool operator==(const MemoKey& o) const {
    return pattern == o.pattern && expr == o.expr && top == o.top && run_top == o.run_top && scope == o.scope &&
           scope_begin == o.scope_begin && next_scope == o.next_scope;
  }
};

// What matching the node did: whether it matched and, when it did, the
// state it left (top, run_top, next_scope; size: the trail's size), or for a
// private node the entries it pushed below its own capture (those from top
// down to, not including, `below`, made in `scope`, with the new scopes
// from `first_scope` to next_scope).
struct MemoResult {
  bool matched;
  uint32_t size, top, run_top, next_scope;
  uint32_t below, scope, first_scope;
};

class MemoTable {
 public:
  void clear() {
    ++generation_;
    size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Valid until the next insert.
  const MemoResult* find(const MemoKey& k) const;
  void insert(const MemoKey& k, const MemoResult& r);

 private:
  struct Slot {
    MemoKey key;
    MemoResult result;
    uint64_t generation;  // an older one than generation_: empty
  };
  size_t mask() const { return slots_.size() - 1; }
  void put(const MemoKey& k, const MemoResult& r);
  void grow();

  std::vector<Slot> slots_;
  uint64_t generation_ = 1;
  size_t size_ = 0;
};

// Node -> whether it is private, for the nodes worth remembering.
using Remembered = std::unordered_map<const PatternNode*, bool>;

class RememberedNodes {
 public:
  // The nodes of root worth remembering, found once per root (the roots are
  // kept alive).
  const Remembered& of(const Pattern& root);

 private:
  struct Found {
    Pattern root;
    Remembered nodes;
  };
  std::unordered_map<const PatternNode*, Found> found_;
};

}  // namespace aj::match_detail
