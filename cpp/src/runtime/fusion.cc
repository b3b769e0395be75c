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
struct Grouping {
  struct Group {
    std::vector<int> members;  // instruction indices
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
    if (!shape) continue;
    if (joins.empty()) {
      joins.push_back(static_cast<int>(grouping.groups.size()));
      grouping.groups.emplace_back();
    }
    auto& into = grouping.groups[static_cast<size_t>(joins[0])];
    for (size_t k = 1; k < joins.size(); ++k) {
      auto& other = grouping.groups[static_cast<size_t>(joins[k])];
      into.members.insert(into.members.end(), other.members.begin(), other.members.end());
      other.members.clear();
      other.merged_into = joins[0];
    }
    into.members.push_back(static_cast<int>(i));
    grouping.group_of[i] = joins[0];
  }

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
    std::vector<int> members = g < 0 ? std::vector<int>{} : grouping.groups[static_cast<size_t>(g)].members;
    if (members.size() < 2) {
      fused_plan.push_back(std::move(instrs_[i]));
      continue;
    }
    std::sort(members.begin(), members.end());
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
  std::vector<int> free_scratch;
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
      int b = group->num_scratch;
      if (!free_scratch.empty()) {
        b = free_scratch.back();
        free_scratch.pop_back();
      } else {
        ++group->num_scratch;
      }
      step.out = BlockRef{BlockRef::kScratch, b};
    }
    result[k] = step.out;
    group->steps.push_back(std::move(step));
    for (size_t j = 0; j <= k; ++j)
      if (last_read[j] == k && result[j].where == BlockRef::kScratch) free_scratch.push_back(result[j].index);
  }
  for (int& b : group->gather_block)
    if (b == -2) b = group->num_scratch++;
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
