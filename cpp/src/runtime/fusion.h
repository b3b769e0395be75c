// A fused group of elementwise ops as the executor runs it: which block
// function each step calls on which operands and where its result goes. The
// grouping is CompiledFunction::fuse_elementwise (fusion.cc); the kernel that
// runs a group block by block over the thread pool is fused_kernel.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "adjoint/runtime/block_kernel.h"
#include "adjoint/runtime/kernel.h"

namespace aj {

// Elements per block: enough that calling a step's block function costs
// little next to its work, few enough that a group's live blocks stay in L2
// between steps (a scratch block of 4096 doubles is 32 KB). PyTorch's Adam
// update over the MLP benchmark's params, one group of 13 ops per param, ran
// 12% faster with 4096 than with 2048, and 1024 and 512 were slower still.
constexpr int64_t kFusedBlock = 4096;

// Where a step's operand or result lives during one block.
struct BlockRef {
  enum Where { kInput, kOutput, kScratch };
  Where where;
  int index;  // KernelContext::inputs / outputs, or a scratch block
};

struct FusedStep {
  BlockFn fn;
  std::vector<BlockRef> args;  // in the op's arg order
  BlockRef out;                // kOutput or kScratch
};

struct FusedGroup {
  std::vector<FusedStep> steps;       // in binding order
  std::vector<size_t> input_bytes;    // element size of each input
  std::vector<size_t> output_bytes;   // element size of each output
  // Per input: the scratch block it is gathered into when it repeats along
  // the group's shape (a trailing-dims broadcast such as a bias), or -1 when
  // its type is the group's or one element.
  std::vector<int> gather_block;
  int num_scratch = 0;  // scratch blocks, each kFusedBlock elements of 8 bytes
};

// The kernel of a fused instruction: every output has the group's shape; an
// input has it too, or is one element, or repeats with a period dividing it.
Kernel fused_kernel(std::shared_ptr<const FusedGroup> group);

}  // namespace aj
