// The byte-buffer form of load_state_dict (nnvm/pytorch.h), for the fuzzers:
// `bytes` is a whole torch.save or torch.jit.save archive, `where` starts
// every error message ("load_state_dict: model.pt").
#pragma once

#include <string>
#include <string_view>

#include "nnvm/core/tensor.h"
#include "nnvm/nn/ordered_dict.h"

namespace nnvm::pt {

OrderedDict<std::string, Tensor> load_state_dict_from_bytes(std::string_view bytes, const std::string& where);

}  // namespace nnvm::pt
