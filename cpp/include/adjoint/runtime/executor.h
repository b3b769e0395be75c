// The CPU executor. build() plans each function of a module once:
//   1. every tensor value gets a slot; tuples, tuple items and var aliases
//      are resolved to the slots of their fields (no copies, no work);
//   2. a permute_dims that swaps the last two axes and is used only as a
//      matmul operand is not run: the matmul reads its input with the GEMM
//      transpose flag set;
//   3. each slot's last use is found, so its buffer returns to a pool right
//      after it, and the next allocation of a fitting size reuses it; an
//      elementwise op whose input of the same type dies there writes over
//      it, and a reshape whose input dies there is that input's buffer (a
//      strided_slice too, at an offset, when its slice is one contiguous
//      block of the input);
//   4. output shapes are computed once when static, or per run by evaluating
//      the symbolic dims with the symbols bound from the inputs;
//   5. a function planned with aliases (donated inputs, as JAX's
//      donate_argnums) writes each aliased output over its input's bytes:
//      straight into them when that is safe (plan_aliases says when), else
//      computed apart and copied in once every instruction has succeeded, so
//      a run that fails leaves every donated input as it was.
// Before 3, with fusion on (the default), chains of elementwise ops of one
// shape become single instructions that run block by block (fusion.cc), so
// liveness, in-place and alias choices see the fused plan.
// run() executes the plan with the GIL released (the bindings do that).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "adjoint/ir/function.h"
#include "adjoint/runtime/kernel.h"

namespace aj {

class BufferPool;
struct FusedGroup;

// Input `param` is donated to flat result `output`: the run writes that
// result over the input's bytes and returns the input's array for it.
struct Alias {
  size_t param = 0;
  size_t output = 0;
  bool direct = false;  // planned: written straight into the input (else copied in after the run)
};

// What the last run allocated and copied.
struct RunStats {
  size_t allocations = 0;      // fresh buffers (pool misses and copies of results)
  size_t allocated_bytes = 0;
  size_t copied_bytes = 0;     // bytes of aliased results copied into their inputs after the run
};

class CompiledFunction {
 public:
  // Throws ExecutionError naming both ends of an alias whose input and
  // output differ in type, are out of range or appear in another alias.
  // fuse: group elementwise ops into fused instructions (runtime/fusion.cc).
  CompiledFunction(std::string name, Function fn, std::vector<Alias> aliases = {}, bool fuse = true);
  ~CompiledFunction();

  const std::string& name() const { return name_; }
  const Function& function() const { return fn_; }

  // Checks inputs against the params (count, dtype, rank, dims; symbols bound
  // consistently) and runs. Inputs must be C-contiguous; they are read in place.
  // Returns the tensors of the result, flattened in order. A donated input
  // (the caller checked that it is writable and overlaps no other input)
  // holds its aliased result after a run that returns, and is unchanged
  // after one that throws; the result holds the input's array there.
  std::vector<NDArray> run(const std::vector<NDArray>& inputs);

  // Validates inputs against the params and binds the symbolic dims.
  std::map<std::string, int64_t> bind_symbols(const std::vector<NDArray>& inputs) const;

  size_t num_instructions() const { return instrs_.size(); }
  size_t num_folded_transposes() const { return folded_transposes_; }
  size_t num_fused_groups() const { return fused_groups_; }  // fused instructions
  size_t num_fused_ops() const { return fused_ops_; }        // the ops they hold
  // Each fused instruction's program (runtime/fusion.h) and the name of the
  // compiled program running it, or "" when the block interpreter does.
  const std::vector<std::pair<std::string, std::string>>& fused_programs() const { return fused_programs_; }
  // The accessors below wait for a run in progress on another thread (they
  // read what it writes).
  size_t pool_bytes() const;  // bytes held by the buffer pool between runs
  // Peak bytes of intermediate and result buffers alive at once in the last
  // run (inputs and constants excluded).
  size_t peak_bytes() const;
  RunStats last_run_stats() const;
  const std::vector<Alias>& aliases() const { return aliases_; }

 private:
  struct Instr {
    const Kernel* kernel;
    KernelContext ctx;
    std::vector<int> in_slots;
    std::vector<int> out_slots;
    std::vector<Type> out_types;                  // symbolic, for dynamic shapes
    std::vector<std::vector<int64_t>> out_shapes;  // static shapes; empty when symbolic
    std::vector<int> release_after;               // slots whose last use is here
    const VarNode* var = nullptr;                 // the binding's var, for messages
    int inplace_from = -1;  // an input slot whose buffer the (single) output takes over
    bool skip_kernel = false;  // a view taking over its input: the bytes are already there (when take_view agrees)
    std::vector<int> write_into;  // per output: the donated param slot it is written into, or -1 (empty: none)
    bool in_tail = false;  // at or after the first direct write: its pool buffers are taken before that write
    std::vector<Type> in_types;  // a fused instruction's: the type of each in_slot
    std::shared_ptr<const Kernel> own_kernel;  // a fused instruction's kernel (`kernel` points to it)
    std::shared_ptr<const FusedGroup> group;   // a fused instruction's steps (which step reads and writes what)
  };

  struct SlotPlanner;  // executor.cc: the slots plan() gives each var and constant
  void plan();
  void plan_releases();
  // runtime/fusion.cc: groups elementwise instructions, each group into one.
  void fuse_elementwise();
  Instr fuse_group(const std::vector<int>& members, const std::vector<int>& producer, const std::vector<bool>& escapes);
  void choose_inplace(Instr& ins, int index, std::vector<int>& last);
  void check_aliases() const;
  void plan_aliases();
  bool can_write_directly(const Alias& a, int producer) const;
  bool written_after_last_read(const Instr& fused, int in, int out) const;
  void take_tail_buffers(const std::map<std::string, int64_t>& env);
  std::vector<NDArray> collect_results(const std::vector<NDArray>& inputs);
  NDArray counted_copy(const NDArray& a);
  int new_slot();
  void execute(Instr& ins, const std::map<std::string, int64_t>& env);
  bool take_view(Instr& ins, const std::map<std::string, int64_t>& env);
  std::vector<int64_t> output_shape(const Instr& ins, size_t k, const std::map<std::string, int64_t>& env) const;
  std::string where(const Instr& ins) const;  // "function 'f', binding 'v' (op 'exp'): "

  std::string name_;
  Function fn_;
  std::vector<NDArray> slots_;
  std::vector<bool> pooled_;          // slot buffers come from the pool
  std::vector<int> param_slots_;
  std::vector<int> ret_slots_;
  std::vector<Instr> instrs_;
  size_t folded_transposes_ = 0;
  bool fuse_ = true;
  size_t fused_groups_ = 0;
  size_t fused_ops_ = 0;
  std::vector<std::pair<std::string, std::string>> fused_programs_;
  size_t last_peak_ = 0;
  std::vector<Alias> aliases_;
  std::vector<int> producer_;      // by slot: the instruction writing it, or -1
  std::vector<int> direct_slots_;  // slots that live in donated inputs' bytes
  int tail_start_ = -1;            // the first instruction writing a donated input, or -1
  RunStats last_stats_;
  std::unique_ptr<BufferPool> pool_;
  mutable std::mutex mu_;  // one run at a time: the plan's slots are reused; the stats are read between runs
};

class Executable {
 public:
  explicit Executable(const Module& mod, bool fuse = true);
  CompiledFunction& get(const std::string& name);  // throws Error when absent
  std::vector<std::string> names() const;
  const Module& module() const { return mod_; }
  // Function `name` planned anew with these aliases (its own plan and pool).
  std::unique_ptr<CompiledFunction> donating(const std::string& name, std::vector<Alias> aliases) const;

 private:
  Module mod_;
  bool fuse_ = true;
  std::map<std::string, std::unique_ptr<CompiledFunction>> fns_;
};

}  // namespace aj
