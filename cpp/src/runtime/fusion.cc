// Elementwise fusion at plan time (CompiledFunction::fuse_elementwise): runs
// of elementwise instructions whose results have one shape become one fused
// instruction (fusion.h) that makes one pass over memory, as XLA's loop
// fusion does. It runs on the instruction list before liveness and in-place
// planning, so buffers and lifetimes are planned on the fused instructions.
//
// What may join a group: an instruction whose op has a block function for
// its dtypes (OpDef::block), with one result, whose operands each have the
// result's shape, or are one element (rank 0, or all dims 1), or repeat
// along it (their dims, leading 1s dropped, are its trailing dims: a bias).
//
// The grouping rule. Instructions are visited in order; a fused group runs
// where its last member was, so its earlier members move down to there. That
// is legal when nothing between a member and the group's position reads the
// member's result: so an instruction that reads a group member's result and
// does not join that group closes the group, and a closed group takes no more
// members. An instruction joins (and merges) the open groups of its shape
// whose results it reads; one reading none starts a group. Its operands are
// all computed before it, hence before the group's new position, and every
// reader of a member outside the group comes after that position, where the
// member's result is in memory. A group of one instruction stays unfused.
//
// A member's result is written to memory when something outside the group
// reads it, the function returns it, or it is the group's last (kept so
// that a fused instruction always has an output); the others live only in
// per-thread scratch blocks.
//
// Each group's program is also written as text (FusedGroup::program); a group
// whose text is one of the compiled programs (fused_programs.cc) runs as that
// program's loop instead of the block interpreter (fused_kernel.cc).
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "adjoint/runtime/executor.h"
#include "fusion.h"

namespace aj {
namespace {

// An operand's shape against a result's: the same, or broadcast from one
// element, or repeating along its trailing dims; false: it cannot be fused.
bool fusible_operand(const Shape& arg, const Shape& result) {
  if (arg == result) return true;
  size_t lead = 0;
  while (lead < arg.size() && arg[lead].is_const() && arg[lead].value() == 1) ++lead;
  size_t rest = arg.size() - lead;
  if (rest == 0) return true;
  if (rest > result.size()) return false;
  return std::equal(arg.begin() + static_cast<std::ptrdiff_t>(lead), arg.end(),
                    result.end() - static_cast<std::ptrdiff_t>(rest));
}

bool is_one_element(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim& d) { return d.is_const() && d.value() == 1; });
}

// Groups under construction; merged groups point to the one they joined.
// A merge moves the smaller groups' members into the largest, so each
// instruction moves O(log n) times and a chain of merges stays short.
struct Grouping {
  struct Group {
    std::vector<int> members;  // instruction indices; sorted by sort_members
    bool open = true;
    int merged_into = -1;
  };
  std::vector<Group> groups;
  std::vector<int> group_of;  // by instruction, -1 when in none

  int find(int g) const {
    while (groups[static_cast<size_t>(g)].merged_into >= 0) g = groups[static_cast<size_t>(g)].merged_into;
    return g;
  }
  int root_of(int instr) const { return group_of[static_cast<size_t>(instr)] < 0 ? -1 : find(group_of[static_cast<size_t>(instr)]); }

  // Adds `instr` to the union of the open groups `joins` (roots), or to a
  // new group when there are none.
  void add(int instr, const std::vector<int>& joins) {
    if (joins.empty()) {
      groups.emplace_back();
      place(instr, static_cast<int>(groups.size() - 1));
      return;
    }
    int into = *std::max_element(joins.begin(), joins.end(), [&](int a, int b) { return size(a) < size(b); });
    for (int g : joins) {
      if (g == into) continue;
      auto& other = groups[static_cast<size_t>(g)];
      auto& members = groups[static_cast<size_t>(into)].members;
      members.insert(members.end(), other.members.begin(), other.members.end());
      std::vector<int>().swap(other.members);
      other.merged_into = into;
    }
    place(instr, into);
  }

  // Each group's members in instruction order (a fused group runs its steps so).
  void sort_members() {
    for (auto& g : groups) std::sort(g.members.begin(), g.members.end());
  }

 private:
  size_t size(int g) const { return groups[static_cast<size_t>(g)].members.size(); }
  void place(int instr, int g) {
    groups[static_cast<size_t>(g)].members.push_back(instr);
    group_of[static_cast<size_t>(instr)] = g;
  }
};

// Scratch blocks for a group's results that live only in scratch: a result
// takes a free block, and its block is free again after the step that reads
// it last (`last_read`, by step). Blocks freed after one step are taken
// again in step order.
class ScratchBlocks {
 public:
  explicit ScratchBlocks(std::vector<size_t> last_read)
      : last_read_(std::move(last_read)), by_last_read_(last_read_.size()) {
    std::iota(by_last_read_.begin(), by_last_read_.end(), size_t{0});
    std::stable_sort(by_last_read_.begin(), by_last_read_.end(),
                     [&](size_t a, size_t b) { return last_read_[a] < last_read_[b]; });
  }

  int take() {
    if (free_.empty()) return count_++;
    int b = free_.back();
    free_.pop_back();
    return b;
  }

  // After step k: frees the scratch blocks of the results it read last.
  void step_done(size_t k, const std::vector<BlockRef>& result) {
    for (; next_ < by_last_read_.size() && last_read_[by_last_read_[next_]] == k; ++next_) {
      const BlockRef& r = result[by_last_read_[next_]];
      if (r.where == BlockRef::kScratch) free_.push_back(r.index);
    }
  }

  int count() const { return count_; }

 private:
  std::vector<size_t> last_read_;
  std::vector<size_t> by_last_read_;  // step indices by last_read_, then index
  size_t next_ = 0;                   // by_last_read_ before this are freed
  std::vector<int> free_;
  int count_ = 0;
};

}  // namespace

void CompiledFunction::fuse_elementwise() {
  const size_t num = instrs_.size();
  std::vector<int> producer(slots_.size(), -1);
  for (size_t i = 0; i < num; ++i)
    for (int s : instrs_[i].out_slots) producer[static_cast<size_t>(s)] = static_cast<int>(i);

  // The block function of each instruction that may be fused, else null.
  std::vector<BlockFn> block(num, nullptr);
  for (size_t i = 0; i < num; ++i) {
    const Instr& ins = instrs_[i];
    const CallNode& call = *ins.ctx.call;
    if (!call.op().block || ins.out_slots.size() != 1 || call.args().size() > 3 ||
        ins.in_slots.size() != call.args().size())
      continue;
    const Shape& shape = ins.out_types[0]->shape();
    bool operands_ok = std::all_of(call.args().begin(), call.args().end(), [&](const Expr& a) {
      return a->type()->is_tensor() && fusible_operand(a->type()->shape(), shape);
    });
    if (operands_ok) block[i] = call.op().block(call);
  }

  Grouping grouping;
  grouping.group_of.assign(num, -1);
  for (size_t i = 0; i < num; ++i) {
    const Shape* shape = block[i] ? &instrs_[i].out_types[0]->shape() : nullptr;
    std::vector<int> joins;
    for (int s : instrs_[i].in_slots) {
      int p = producer[static_cast<size_t>(s)];
      int g = p < 0 ? -1 : grouping.root_of(p);
      if (g < 0 || std::find(joins.begin(), joins.end(), g) != joins.end()) continue;
      auto& group = grouping.groups[static_cast<size_t>(g)];
      bool joinable = shape && group.open && instrs_[static_cast<size_t>(group.members[0])].out_types[0]->shape() == *shape;
      if (joinable) joins.push_back(g);
      else group.open = false;
    }
    if (shape) grouping.add(static_cast<int>(i), joins);
  }
  grouping.sort_members();

  // Results read outside their group or returned must be in memory.
  std::vector<bool> escapes(slots_.size(), false);
  for (int s : ret_slots_) escapes[static_cast<size_t>(s)] = true;
  for (size_t i = 0; i < num; ++i) {
    int here = grouping.root_of(static_cast<int>(i));
    for (int s : instrs_[i].in_slots) {
      int p = producer[static_cast<size_t>(s)];
      if (p >= 0 && grouping.root_of(p) != here) escapes[static_cast<size_t>(s)] = true;
    }
  }

  std::vector<Instr> fused_plan;
  for (size_t i = 0; i < num; ++i) {
    int g = grouping.root_of(static_cast<int>(i));
    const std::vector<int>* group = g < 0 ? nullptr : &grouping.groups[static_cast<size_t>(g)].members;
    if (!group || group->size() < 2) {
      fused_plan.push_back(std::move(instrs_[i]));
      continue;
    }
    const std::vector<int>& members = *group;
    if (members.back() != static_cast<int>(i)) continue;
    fused_plan.push_back(fuse_group(members, producer, escapes));
    ++fused_groups_;
    fused_ops_ += members.size();
  }
  instrs_ = std::move(fused_plan);
}

// One instruction for the group `members` (instruction indices, in order):
// its inputs are the operands computed outside the group, its outputs the
// members' results that escape it (and the last member's).
CompiledFunction::Instr CompiledFunction::fuse_group(const std::vector<int>& members, const std::vector<int>& producer,
                                                     const std::vector<bool>& escapes) {
  const Instr& last = instrs_[static_cast<size_t>(members.back())];
  Instr fused{};
  fused.ctx.call = last.ctx.call;
  fused.var = last.var;
  auto group = std::make_shared<FusedGroup>();
  const Shape& shape = last.out_types[0]->shape();

  std::unordered_map<int, size_t> position;  // member instruction -> step
  for (size_t k = 0; k < members.size(); ++k) position[members[k]] = k;
  // The step after which each member's result is no longer read in the group.
  std::vector<size_t> last_read(members.size());
  std::iota(last_read.begin(), last_read.end(), size_t{0});
  for (size_t k = 0; k < members.size(); ++k)
    for (int s : instrs_[static_cast<size_t>(members[k])].in_slots) {
      auto it = position.find(producer[static_cast<size_t>(s)]);
      if (it != position.end()) last_read[it->second] = k;
    }

  std::unordered_map<int, int> input_of;  // slot -> input index
  std::vector<BlockRef> result(members.size(), BlockRef{BlockRef::kScratch, -1});
  ScratchBlocks scratch(std::move(last_read));
  std::string program = str(dtype_name(last.out_types[0]->dtype()), ": ");
  for (size_t k = 0; k < members.size(); ++k) {
    const Instr& ins = instrs_[static_cast<size_t>(members[k])];
    const CallNode& call = *ins.ctx.call;
    FusedStep step{call.op().block(call), {}, {}};
    program += (k ? " ; " : "") + call.op().name + "(";
    for (size_t a = 0; a < ins.in_slots.size(); ++a) {
      int s = ins.in_slots[a];
      program += a ? ", " : "";
      auto member = position.find(producer[static_cast<size_t>(s)]);
      if (member != position.end()) {
        step.args.push_back(result[member->second]);
        program += "s" + std::to_string(member->second);
        continue;
      }
      auto [it, added] = input_of.emplace(s, static_cast<int>(fused.in_slots.size()));
      const Type& t = call.args()[a]->type();
      if (added) {
        fused.in_slots.push_back(s);
        fused.in_types.push_back(t);
        group->input_bytes.push_back(dtype_size(t->dtype()));
        bool tiles = !(t->shape() == shape) && !is_one_element(t->shape());
        group->gather_block.push_back(tiles ? -2 : -1);  // numbered after the steps' blocks
      }
      step.args.push_back(BlockRef{BlockRef::kInput, it->second});
      program += "i" + std::to_string(it->second) + (t->shape() == shape ? "" : is_one_element(t->shape()) ? ":1" : ":t");
      if (t->dtype() != last.out_types[0]->dtype()) program += str(":", dtype_name(t->dtype()));
    }
    program += ")";
    int out_slot = ins.out_slots[0];
    if (escapes[static_cast<size_t>(out_slot)] || k + 1 == members.size()) {
      program += ">";
      step.out = BlockRef{BlockRef::kOutput, static_cast<int>(fused.out_slots.size())};
      fused.out_slots.push_back(out_slot);
      fused.out_types.push_back(ins.out_types[0]);
      fused.out_shapes.push_back(ins.out_shapes[0]);
      group->output_bytes.push_back(dtype_size(ins.out_types[0]->dtype()));
    } else {
      step.out = BlockRef{BlockRef::kScratch, scratch.take()};
    }
    result[k] = step.out;
    group->steps.push_back(std::move(step));
    scratch.step_done(k, result);
  }
  group->num_scratch = scratch.count();
  for (int& b : group->gather_block)
    if (b == -2) b = group->num_scratch++;
  group->block_length = fused_block_length(group->num_scratch);
  group->program = std::move(program);
  fused.group = group;
  std::string compiled_name;
  Kernel compiled = compiled_program(*group, compiled_name);
  fused_programs_.emplace_back(group->program, compiled_name);
  auto kernel = std::make_shared<const Kernel>(compiled ? std::move(compiled) : fused_kernel(std::move(group)));
  fused.kernel = kernel.get();
  fused.own_kernel = std::move(kernel);
  return fused;
}

}  // namespace aj
