#include "nnvm/jit/launch_key.h"

namespace nnvm::jit {

namespace {
thread_local int64_t t_key_compares = 0;
}  // namespace

int64_t launch_key_compares() { return t_key_compares; }

namespace detail {
void count_launch_key_compare() { ++t_key_compares; }
}  // namespace detail

}  // namespace nnvm::jit
