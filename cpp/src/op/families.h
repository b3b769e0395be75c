// The op families: each registers its ops, in one function, from its own file.
// This is the one list of every family (registry.cc calls them in order).
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

}  // namespace aj
