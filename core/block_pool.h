// A per-thread free list of same-sized blocks, as a std allocator, for the
// TensorImpls and Storages every op makes: an eager op's output, a view, the
// recorder's lazy outputs, a plan's outputs. A trace holds each lazy storage
// (a shared_ptr in its owed list, not a weak reference) until it flushes; the
// flush keeps up to 256 that no tensor holds any more as spares and frees the
// rest at once, and the next trace fetches them again one by one. Here freed
// blocks wait on the freeing thread's list for the next allocation of that
// size, instead of malloc's slow path. Under AddressSanitizer
// a block is poisoned while it waits, so a use after free is still seen.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include "nnvm/core/hot_tls.h"
#include "nnvm/core/tensor.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace nnvm {

// Blocks of one size. A block freed on a thread whose list is already gone
// (its thread_locals are being destroyed) goes straight back to the heap.
template <size_t kBytes> class BlockFreeList {
 public:
  static void* take() {
    BlockFreeList* l = local();
    if (!l || !l->head_) return ::operator new(kBytes);
    Node* n = l->head_;
    unpoison(n);
    l->head_ = n->next;
    --l->count_;
    return n;
  }
  static void give(void* p) {
    BlockFreeList* l = local();
    if (!l || l->count_ >= kMaxBlocks) {
      ::operator delete(p);
      return;
    }
    l->head_ = new (p) Node{l->head_};
    poison(p);
    ++l->count_;
  }

  ~BlockFreeList() {
    dead() = true;
    current() = nullptr;
    while (head_) {
      Node* n = head_;
      unpoison(n);
      head_ = n->next;
      ::operator delete(n);
    }
  }

 private:
  struct Node {
    Node* next;
  };
  static_assert(kBytes >= sizeof(Node));
#if defined(__SANITIZE_ADDRESS__)
  static void poison(void* p) { ASAN_POISON_MEMORY_REGION(p, kBytes); }
  static void unpoison(void* p) { ASAN_UNPOISON_MEMORY_REGION(p, kBytes); }
#else
  static void poison(void*) {}
  static void unpoison(void*) {}
#endif
  static constexpr size_t kMaxBlocks = 4096;  // what one long trace frees, give or take

  // Both trivially destructible, so readable while other thread_locals die.
  static bool& dead() {
    NNVM_HOT_TLS static thread_local bool d = false;
    return d;
  }
  static BlockFreeList*& current() {
    NNVM_HOT_TLS static thread_local BlockFreeList* l = nullptr;
    return l;
  }
  static BlockFreeList* local() {
    if (BlockFreeList* l = current()) [[likely]] return l;
    if (dead()) return nullptr;
    thread_local BlockFreeList list;
    current() = &list;
    return &list;
  }

  Node* head_ = nullptr;
  size_t count_ = 0;
};

template <class T> struct BlockPool {
  using value_type = T;
  BlockPool() = default;
  template <class U> BlockPool(const BlockPool<U>&) {}

  T* allocate(size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockFreeList<sizeof(T)>::take());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    BlockFreeList<sizeof(T)>::give(p);
  }
  template <class U> bool operator==(const BlockPool<U>&) const { return true; }
};

// A tensor whose TensorImpl (with its reference counts) comes from the
// pool, constructed with its layout: copying a DimVector into a new one is a
// memcpy, assigning one is a loop.
template <class Shape, class Strides>
Tensor pooled_tensor(std::shared_ptr<Storage> storage, Shape&& shape, Strides&& strides, int64_t offset, DType dtype,
                     Device device, bool is_view = false) {
  return Tensor(std::allocate_shared<TensorImpl>(BlockPool<TensorImpl>(), std::move(storage),
                                                 std::forward<Shape>(shape), std::forward<Strides>(strides), offset,
                                                 dtype, device, is_view));
}

}  // namespace nnvm
