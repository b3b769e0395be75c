// A fused group of elementwise ops as the executor runs it: which block
// function each step calls on which operands and where its result goes. The
// grouping is CompiledFunction::fuse_elementwise (fusion.cc); the kernel that
// runs a group block by block over the thread pool is fused_kernel.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
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
// A group with more live scratch blocks than fit this many bytes at
// kFusedBlock elements runs in shorter blocks (halved down to
// kMinFusedBlock), so a wide group (thousands of results live at once, each
// kept to its reader) keeps its scratch within L2 as a narrow one does, and
// a thread's scratch does not grow to the group's width times 32 KB.
constexpr int64_t kFusedScratchBudget = int64_t{1} << 20;
constexpr int64_t kMinFusedBlock = 64;

// The block length of a group with `num_scratch` scratch blocks: kFusedBlock
// halved until they fit kFusedScratchBudget, and no shorter than kMinFusedBlock.
int64_t fused_block_length(int num_scratch);
// When a thread cannot have its scratch, it runs the group in blocks short
// enough to fit this many bytes on its stack (one element at the least), so
// a group of at most kMaxFallbackScratch scratch blocks never fails for
// memory; a wider one may (OpDef::may_fail, for donation.cc).
constexpr size_t kFallbackScratchBytes = 64 * 1024;
constexpr int kMaxFallbackScratch = static_cast<int>(kFallbackScratchBytes / sizeof(double));

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
  int num_scratch = 0;  // scratch blocks, each block_length elements of 8 bytes
  int64_t block_length = kFusedBlock;  // elements a thread runs every step on at once
  // The steps as text, for matching against compiled programs and for
  // reports: "<dtype>: op(arg, ...)[>] ; ..." where an arg is sN (step N's
  // result), iN (input N, the group's shape), iN:1 (one element) or iN:t (a
  // repeating input), followed by ":<dtype>" when that is not the group's;
  // ">" marks a step writing an output.
  std::string program;
};

// The kernel of a fused instruction: every output has the group's shape; an
// input has it too, or is one element, or repeats with a period dividing it.
Kernel fused_kernel(std::shared_ptr<const FusedGroup> group);

// A compiled program (fused_programs.cc): a kernel computing the whole of a
// group whose `program` it implements in one loop, with the same operations
// in the same order (so the same bits), or an empty Kernel when none does.
// `name` is set to the program's name when one is found.
Kernel compiled_program(const FusedGroup& group, std::string& name);

}  // namespace aj
