#include "nnvm/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace nnvm::detail {

void dcheck_failed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "nnvm internal check failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}

}  // namespace nnvm::detail
