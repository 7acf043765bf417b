// The model of the few thread-locals every op reads (docs/DESIGN.md §1: the per-op
// path). The library's thread-locals go through TLS descriptors
// (CMakeLists.txt), a call per access that keeps it loadable with dlopen;
// the ones marked NNVM_HOT_TLS use the initial-exec model instead, a load at
// a fixed offset from the thread pointer. That marks the whole library
// STATIC_TLS: a dlopen of it then needs its whole TLS segment in glibc's
// static reserve, so the segment is kept small: a large thread-local (the
// recorder, a JIT program's launch slots) lives on the heap behind a
// thread-local pointer. glibc keeps 512 bytes of that reserve for libraries
// loaded after start-up; the segment is 408 bytes. Test
// dlopen_library loads libnnvm.so with dlopen.
//
// Only the shared library needs it: an executable's own thread-locals are
// initial-exec or local-exec already (and GCC 12's UBSan there reported the
// address of such a variable, marked so, as null: BlockPool's test).
#pragma once

#include <memory>

#if defined(__PIC__) && !defined(__PIE__)
#define NNVM_HOT_TLS [[gnu::tls_model("initial-exec")]]
#else
#define NNVM_HOT_TLS
#endif

namespace nnvm {

// The calling thread's T, made on first use and destroyed when the thread
// ends: one initial-exec pointer in the TLS segment, the object on the heap.
// `Tag` tells apart two states of one type.
template <class T, class Tag = T> T& thread_state() {
  NNVM_HOT_TLS static thread_local T* state = nullptr;
  if (!state) [[unlikely]] {
    thread_local std::unique_ptr<T> own = std::make_unique<T>();
    state = own.get();
  }
  return *state;
}

}  // namespace nnvm
