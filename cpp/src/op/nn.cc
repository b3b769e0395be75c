// Neural-network ops (filled in by the operator-set work).
#include "families.h"

namespace aj {

void register_nn_ops(OpRegistry& reg) {}

}  // namespace aj
