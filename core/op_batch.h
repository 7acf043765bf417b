// Ops declared as a batch, all or none (a plugin's, nnvm/plugin.h): unlike
// register_op (core/op.h), which returns an op already declared, a batch
// must be new to the op table.
#pragma once

#include <vector>

#include "nnvm/core/op.h"

namespace nnvm {

// Declares each op of `defs` as a new op, all or none: throws nnvm::Error
// naming the first name already declared or given twice, having declared none.
void register_new_ops(std::vector<OpDef> defs);

}  // namespace nnvm
