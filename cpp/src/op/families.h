// The op families, in the order op_list.def lists them: each defines its
// ops in one function, in its own file (registry.cc runs them in order).
#pragma once

#include "adjoint/op/registry.h"

namespace aj {

void register_binary_ops(OpRegistry& reg);      // binary.cc
void register_unary_ops(OpRegistry& reg);       // unary.cc
void register_linalg_ops(OpRegistry& reg);      // linalg.cc
void register_manipulate_ops(OpRegistry& reg);  // manipulate.cc
void register_reduce_ops(OpRegistry& reg);      // reduce.cc
void register_create_ops(OpRegistry& reg);      // create.cc
void register_nn_ops(OpRegistry& reg);          // nn.cc

struct OpFamily {
  const char* name;  // as op_list.def spells it
  void (*define_ops)(OpRegistry& reg);
};

inline constexpr OpFamily kOpFamilies[] = {
    {"binary", register_binary_ops},         {"unary", register_unary_ops},
    {"linalg", register_linalg_ops},         {"manipulate", register_manipulate_ops},
    {"reduce", register_reduce_ops},         {"create", register_create_ops},
    {"nn", register_nn_ops},
};

}  // namespace aj
