// Weights kept packed between products (gemm_prepack.h).
#include "nnvm/kernels/cpu/gemm_prepack.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "nnvm/kernels/cpu/gemm.h"

namespace nnvm::cpu {

namespace {

struct Packed {
  int64_t rs, cs, k, n;
  int vector_bytes;
  uint64_t version, rewrites;
  std::shared_ptr<const float> panels;
};

struct Kept {
  std::weak_ptr<Storage> storage;
  std::vector<Packed> packed;  // one per layout the products read it in
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, Kept> kept;  // by the storage's first byte
  // Registered while lazy (a traced program's weights, not yet computed):
  // kept by address once they have memory.
  std::vector<std::weak_ptr<Storage>> waiting;
  std::atomic<bool> any{false};  // anything ever registered: products before that take no lock
};

// Files the waiting storages that have memory now (the lock held).
void settle(Registry& r) {
  std::erase_if(r.waiting, [&](const std::weak_ptr<Storage>& w) {
    const std::shared_ptr<Storage> s = w.lock();
    if (!s) return true;
    if (!s->data()) return false;
    r.kept[s->data()] = Kept{s, {}};
    return true;
  });
}

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: pool threads may multiply during exit
  return *r;
}

std::shared_ptr<const float> pack_whole(const float* b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                                        int vector_bytes) {
  const int64_t nr = 2 * vector_bytes / int64_t(sizeof(float)), panels = (n + nr - 1) / nr;
  float* out = static_cast<float*>(::operator new[](size_t(panels * k * nr) * sizeof(float), std::align_val_t(64)));
  std::shared_ptr<const float> owned(out, [](const float* p) {
    ::operator delete[](const_cast<float*>(p), std::align_val_t(64));
  });
  for (int64_t j = 0; j < panels; ++j)
    gemm_pack_b(vector_bytes, b + j * nr * cs, rs, cs, k, std::min(nr, n - j * nr), out + j * k * nr);
  return owned;
}

}  // namespace

void gemm_keep_packed(const std::shared_ptr<Storage>& storage) {
  if (!storage || storage->nbytes() == 0) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase_if(r.kept, [](const auto& entry) { return entry.second.storage.expired(); });
  r.any.store(true, std::memory_order_release);
  if (!storage->data()) {
    r.waiting.push_back(storage);
    return;
  }
  Kept& kept = r.kept[storage->data()];
  if (kept.storage.lock() != storage) kept = Kept{storage, {}};
}

std::shared_ptr<const float> gemm_packed_b(const float* b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                                           int vector_bytes) {
  Registry& r = registry();
  if (!r.any.load(std::memory_order_acquire)) return nullptr;
  auto same_layout = [&](const Packed& p) {
    return p.rs == rs && p.cs == cs && p.k == k && p.n == n && p.vector_bytes == vector_bytes;
  };
  // The registered storage that `b` starts, under the lock (null: not one).
  auto find = [&]() -> std::pair<Kept*, std::shared_ptr<Storage>> {
    if (!r.waiting.empty()) settle(r);
    const auto it = r.kept.find(b);
    if (it == r.kept.end()) return {};
    std::shared_ptr<Storage> storage = it->second.storage.lock();
    if (!storage || storage->data() != b) {  // died (the address reused) or moved
      r.kept.erase(it);
      return {};
    }
    return {&it->second, std::move(storage)};
  };
  uint64_t version = 0, rewrites = 0;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto [kept, storage] = find();
    // a flush writing it now: its version ran ahead of its bytes (packed per call)
    if (!kept || storage->rewriting()) return nullptr;
    version = storage->version();
    rewrites = storage->rewrites();
    for (const Packed& p : kept->packed)
      if (same_layout(p) && p.version == version && p.rewrites == rewrites) return p.panels;
  }
  // Packed outside the lock (megabytes: other products go on meanwhile),
  // kept if the storage has not changed since.
  std::shared_ptr<const float> panels = pack_whole(b, rs, cs, k, n, vector_bytes);
  std::lock_guard<std::mutex> lock(r.mutex);
  const auto [kept, storage] = find();
  if (!kept || storage->rewriting() || storage->version() != version || storage->rewrites() != rewrites)
    return panels;  // (right for the bytes it read; the next product packs again)
  std::vector<Packed>& packed = kept->packed;
  const auto old = std::find_if(packed.begin(), packed.end(), same_layout);
  const Packed fresh{rs, cs, k, n, vector_bytes, version, rewrites, panels};
  if (old == packed.end()) packed.push_back(fresh);
  else *old = fresh;
  return panels;
}

int64_t gemm_packed_count() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  settle(r);
  int64_t count = 0;
  for (const auto& [data, kept] : r.kept)
    if (!kept.storage.expired()) count += int64_t(kept.packed.size());
  return count;
}

}  // namespace nnvm::cpu
