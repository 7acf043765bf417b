#include "nnvm/core/knobs.h"

#include <cstdlib>
#include <string>
#include <thread>

namespace nnvm {

namespace {
int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return (end && *end == '\0' && x > 0) ? x : fallback;
}
}  // namespace

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs k;
    k.threads = int(env_int("NNVM_THREADS", std::max(1u, std::thread::hardware_concurrency())));
    k.cpu_cache_limit = env_int("NNVM_CPU_CACHE_LIMIT", int64_t(8) << 30);
    k.alloc_guard = env_int("NNVM_ALLOC_GUARD", 0) == 1;
    k.hot = int(env_int("NNVM_HOT", 2));
    const char* mode = std::getenv("NNVM_MODE");
    k.traced = !(mode && std::string_view(mode) == "eager");
    k.trace_cap = env_int("NNVM_TRACE_CAP", 16384);
    const char* dump = std::getenv("NNVM_DUMP");
    k.dump_dir = dump ? dump : "";
    const char* log = std::getenv("NNVM_LOG");
    k.log = log ? log : "";
    const char* isa = std::getenv("NNVM_ISA");
    k.isa = isa ? isa : "";
    const char* cache_dir = std::getenv("NNVM_CACHE_DIR");
    k.cache_dir = cache_dir ? cache_dir : "";
    const char* profile = std::getenv("NNVM_PROFILE");
    k.profile = profile ? profile : "";
    const char* plugins = std::getenv("NNVM_PLUGINS");
    k.plugins = plugins ? plugins : "";
    k.check = env_int("NNVM_CHECK", 0) == 1;
    const char* repro = std::getenv("NNVM_REPRO");
    k.repro_dir = repro ? repro : "";
    return k;
  }();
  return k;
}

bool log_enabled(std::string_view topic) {
  for (std::string_view rest = knobs().log; !rest.empty();) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == topic) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

}  // namespace nnvm
