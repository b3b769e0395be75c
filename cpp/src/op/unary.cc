// Unary elementwise ops (filled in by the operator-set work).
#include "families.h"

namespace aj {

void register_unary_ops(OpRegistry& reg) {}

}  // namespace aj
