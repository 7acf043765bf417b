// nnvm::str, c10::str's spelling: streams every argument (numbers, strings,
// tensors, dtypes, anything with an operator<<) into one std::string.
#pragma once

#include <string>

#include "nnvm/core/error.h"

namespace nnvm {

template <class... Args> std::string str(const Args&... args) {
  if constexpr (sizeof...(Args) == 0)
    return {};  // concat's fold would be a bare `os;`
  else
    return detail::concat(args...);
}

}  // namespace nnvm
