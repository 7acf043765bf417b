// The per-thread block pool (core/block_pool.h): blocks freed on any thread
// are reused, an eager op's output and a view take their objects from it,
// and under AddressSanitizer a waiting block is poisoned.
#include "nnvm/core/block_pool.h"

#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <vector>

#include "nnvm/nnvm.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace nnvm {
namespace {

TEST(BlockPool, BlocksFreedOnAnotherThreadAreReused) {
  BlockPool<std::array<char, 96>> pool;
  std::vector<std::array<char, 96>*> blocks;
  for (int i = 0; i < 100; ++i) {
    blocks.push_back(pool.allocate(1));
    blocks.back()->fill(char(i));
  }
  std::thread([&] {
    BlockPool<std::array<char, 96>> other;
    for (auto* b : blocks) other.deallocate(b, 1);  // onto that thread's list, freed when it ends
  }).join();
  for (int i = 0; i < 100; ++i) {
    blocks[size_t(i)] = pool.allocate(1);
    blocks[size_t(i)]->fill(char(i));
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ((*blocks[size_t(i)])[95], char(i));
  for (auto* b : blocks) pool.deallocate(b, 1);
  auto* same = pool.allocate(1);
  EXPECT_EQ(same, blocks.back());  // the last block freed here is the first handed out
  pool.deallocate(same, 1);
}

// An eager op's output tensor and storage, and a view's tensor, are taken
// from the thread's lists: a block put there first is what they get (malloc
// could not hand it out; it never saw it freed).
TEST(BlockPool, EagerOutputsAndViewsTakeTheirBlocksFromTheLists) {
  const EagerGuard eager;
  const Tensor a = ones({4}), b = ones({4});
  auto waiting_storage = [] {
    auto s = std::allocate_shared<Storage>(BlockPool<Storage>(), 16, Device());
    return s.get();  // its block goes back to the list here
  };
  auto waiting_tensor = [&] {
    const Tensor t = pooled_tensor(a.storage(), DimVector{4}, DimVector{1}, 0, a.dtype(), a.device());
    return t.impl();
  };
  const Storage* storage = waiting_storage();
  const TensorImpl* impl = waiting_tensor();
  const Tensor c = a + b;
  EXPECT_EQ(c.storage().get(), storage);
  EXPECT_EQ(c.impl(), impl);
  impl = waiting_tensor();
  const Tensor v = a.narrow(0, 1, 2);
  EXPECT_EQ(v.impl(), impl);
  EXPECT_EQ(v.storage().get(), a.storage().get());
}

#if defined(__SANITIZE_ADDRESS__)
TEST(BlockPool, AWaitingBlockIsPoisoned) {
  BlockPool<std::array<char, 80>> pool;
  std::array<char, 80>* block = pool.allocate(1);
  block->fill(1);
  pool.deallocate(block, 1);
  EXPECT_TRUE(__asan_address_is_poisoned(block->data() + 40));  // a read here would be reported
  std::array<char, 80>* again = pool.allocate(1);
  ASSERT_EQ(again, block);
  EXPECT_FALSE(__asan_address_is_poisoned(again->data() + 40));
  pool.deallocate(again, 1);
}
#endif

}  // namespace
}  // namespace nnvm
