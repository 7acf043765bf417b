#include "nnvm/trace/backend.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "nnvm/core/error.h"

namespace nnvm::trace {

namespace {

struct Entry {
  std::shared_ptr<const Backend> backend;
  int priority;
};

// Registration is rare (start-up, a plugin's load); reads happen on every
// replay. Each registration publishes a new immutable list and keeps the
// old ones alive, so a reader needs no lock and no reference count.
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<const std::vector<Entry>>> lists;  // every list ever published
  std::atomic<const std::vector<Entry>*> current{nullptr};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may run during exit
  return *r;
}

const std::vector<Entry>& current() {
  static const std::vector<Entry> none;
  const std::vector<Entry>* list = registry().current.load(std::memory_order_acquire);
  return list ? *list : none;
}

}  // namespace

void register_backend(std::shared_ptr<const Backend> backend, int priority) {
  NNVM_CHECK(backend != nullptr, "register_backend", "the backend is null");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto list = std::make_unique<std::vector<Entry>>(current());
  for (const Entry& e : *list)
    NNVM_CHECK(e.backend->name() != backend->name(), "register_backend", "a backend named '",
               std::string(backend->name()), "' is already registered");
  // after every entry of at least its priority: equal priorities keep their order
  const auto at = std::find_if(list->begin(), list->end(), [&](const Entry& e) { return e.priority < priority; });
  list->insert(at, Entry{std::move(backend), priority});
  r.current.store(list.get(), std::memory_order_release);
  r.lists.push_back(std::move(list));
}

std::vector<std::shared_ptr<const Backend>> backends() {
  std::vector<std::shared_ptr<const Backend>> out;
  for (const Entry& e : current()) out.push_back(e.backend);
  return out;
}

uint64_t backends_variant() {
  uint64_t v = 0;
  for (const Entry& e : current()) v = v * 0x100000001b3ull ^ e.backend->variant();
  return v;
}

}  // namespace nnvm::trace
