#include "nnvm/jit/kernel_dump.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/jit/x86/isa.h"

namespace nnvm::jit {

namespace {

struct Settings {
  std::mutex mutex;  // guards the fields and serialises appends to the perf map
  std::string dump_dir = knobs().dump_dir;
  bool perf_map = !knobs().dump_dir.empty();
};

Settings& settings() {
  static auto* s = new Settings();  // leaked: kernels may compile during static destruction
  return *s;
}

void write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(bytes));
  out.close();
  NNVM_CHECK(out.good(), "NNVM_DUMP", "cannot write ", path.string());
}

}  // namespace

void set_kernel_dump_dir(std::string dir) {
  std::lock_guard<std::mutex> lock(settings().mutex);
  settings().dump_dir = std::move(dir);
}

std::string kernel_dump_dir() {
  std::lock_guard<std::mutex> lock(settings().mutex);
  return settings().dump_dir;
}

void set_perf_map(bool on) {
  std::lock_guard<std::mutex> lock(settings().mutex);
  settings().perf_map = on;
}

bool perf_map_enabled() {
  std::lock_guard<std::mutex> lock(settings().mutex);
  return settings().perf_map;
}

std::string perf_map_path() { return absl::StrCat("/tmp/perf-", getpid(), ".map"); }

uint64_t kernel_hash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string kernel_file_stem(std::string_view key, Isa isa) {
  return absl::StrFormat("kernel-%016x-%s", kernel_hash(key), isa_name(isa));
}

std::string hex_dump(const void* code, size_t bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(code);
  std::string out;
  for (size_t at = 0; at < bytes; at += 32) {
    absl::StrAppend(&out, absl::Hex(at, absl::kZeroPad4), ":");
    for (size_t k = at; k < std::min(bytes, at + 32); ++k) {
      out += ' ';
      out += kDigits[p[k] >> 4];
      out += kDigits[p[k] & 15];
    }
    out += '\n';
  }
  return out;
}

void publish_kernel(std::string_view kind, std::string_view key, Isa isa, const void* code, size_t bytes,
                    std::string_view text) {
  const std::string dir = kernel_dump_dir();
  if (!dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    NNVM_CHECK(!error, "NNVM_DUMP", "cannot create the directory ", dir, ": ", error.message());
    const std::filesystem::path stem = std::filesystem::path(dir) / kernel_file_stem(key, isa);
    write_file(stem.string() + ".bin", code, bytes);
    const std::string listing = "# " + std::string(kind) + " " + std::string(key) + "\n" + std::string(text);
    write_file(stem.string() + ".loopir.txt", listing.data(), listing.size());
  }
  std::lock_guard<std::mutex> lock(settings().mutex);
  if (!settings().perf_map) return;
  // one fprintf of a whole line under the lock: lines from threads never interleave
  FILE* map = std::fopen(perf_map_path().c_str(), "a");
  if (!map) return;  // profiling aid only: a read-only /tmp must not fail the compile
  std::fprintf(map, "%lx %zx nnvm_jit_%.*s_%016lx_%s\n", reinterpret_cast<unsigned long>(code), bytes,
               int(kind.size()), kind.data(), static_cast<unsigned long>(kernel_hash(key)), isa_name(isa));
  std::fclose(map);
}

}  // namespace nnvm::jit
