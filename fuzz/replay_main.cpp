// A main() for the libFuzzer targets of fuzz/ without libFuzzer: linked with
// one fuzz_*.cpp into fuzz_<name>_replay (GCC, tests builds), it feeds the
// target's LLVMFuzzerTestOneInput. Not coverage-guided: it replays inputs
// and deterministic mutations of them, so that the test suite, plain and
// under ASan + UBSan, runs every reader on malformed bytes without a clang
// build (tools/fuzz.sh is the real fuzzer).
//
//   fuzz_onnx_replay FILE...              run each file once (libFuzzer's standalone mode)
//   fuzz_onnx_replay [options] DIR|FILE... the files (a directory: its files, sorted), then
//                                          mutations of them
//     -runs=N            at most N mutated inputs (default 100000)
//     -max_total_time=S  stop mutating after S seconds (default 3)
//     -seed=N            the mutations' random seed (default 1)
//     -timeout=S         abort when one input runs longer than S seconds (default 10)
//     -only=I            run mutated input I alone (what a failure names)
//     -last_input=PATH   write each input to PATH before running it
//     -save=PATH         write mutated input -only=I to PATH and exit
//
// Mutated input I is a function of the seed files, -seed and I alone. Each
// stacks one to three edits of a seed: truncation, bit flips, overwrites with
// 0, 0xff, 0x7f, 0x80 (as bytes and as 16/32/64-bit words), a chunk deleted,
// duplicated or overwritten with a chunk of another seed, or a splice of two
// seeds. In half of them, where the seed is a protobuf message (ONNX, .pb) the
// edits are of its fields (a value, a field deleted or repeated, bytes inside
// one) with the lengths re-encoded, and where it is a zip (.pt) they are inside
// one entry, whose CRC-32 is recomputed so that they reach the pickle and the
// storages (the libFuzzer build skips the check).
//
// A crash, a sanitizer report or a timeout prints "fuzz replay: failed on
// input <hash> (<file or mutation>)" and exits non-zero; the input's bytes are
// in -last_input's file (the tests: build/fuzz/fuzz_<name>-last-input), so
//   build/fuzz/fuzz_onnx_replay build/fuzz/fuzz_onnx-last-input
// reruns it (copy it first: a run rewrites the file), and -only=I -save=PATH
// recreates mutation I from the same seeds. A leak is reported at exit, with
// the stack that allocated it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <fcntl.h>
#include <unistd.h>
#include <vector>
#include <zlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define NNVM_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NNVM_REPLAY_ASAN 1
#endif
#endif
#ifdef NNVM_REPLAY_ASAN
#include <sanitizer/common_interface_defs.h>
// GCC links UBSan's runtime apart from ASan's, and its fatal reports (NNVM_SANITIZE
// has -fno-sanitize-recover=undefined) skip ASan's death callback: they abort
// instead, which the SIGABRT handler below reports. (UBSAN_OPTIONS overrides.)
extern "C" const char* __ubsan_default_options() { return "abort_on_error=1"; }
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using Bytes = std::string;
using Clock = std::chrono::steady_clock;

struct Seed {
  std::string path;
  Bytes bytes;
};

// ---- the deterministic generator: splitmix64, its own bounded draw (no <random> distributions,
// whose results differ between standard libraries) ----
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : size_t(next() % n); }  // in [0, n)
  size_t upto(size_t n) { return size_t(next() % (uint64_t(n) + 1)); }  // in [0, n]
};

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// ---- mutations ----
void put_le(Bytes& b, size_t at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width && at + i < b.size(); ++i) b[at + i] = char(uint8_t(v >> (8 * i)));
}

// One edit of `b` that keeps its size (nothing where it is empty), described in `recipe`.
void mutate_in_place(Bytes& b, Rng& rng, std::string& recipe) {
  static constexpr uint8_t kBytes[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
  static constexpr uint64_t kWords[] = {0, ~0ULL, 0x7f, 0x80, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
                                        0xffffffff, 0x7fffffffffffffffULL, 0x8000000000000000ULL};
  if (b.empty()) return;
  char note[160];
  const size_t at = rng.below(b.size());
  switch (rng.below(3)) {
    case 0: {  // bit flips
      const size_t flips = 1 + rng.below(8);
      std::snprintf(note, sizeof note, "flip %zu bits from %zu; ", flips, at);
      for (size_t i = 0; i < flips; ++i) b[(at + rng.below(16)) % b.size()] ^= char(1u << rng.below(8));
      break;
    }
    case 1: {  // interesting bytes
      const size_t n = 1 + rng.below(4);
      const uint8_t v = kBytes[rng.below(std::size(kBytes))];
      std::snprintf(note, sizeof note, "set %zu bytes at %zu to 0x%02x; ", n, at, v);
      for (size_t i = 0; i < n && at + i < b.size(); ++i) b[at + i] = char(v);
      break;
    }
    default: {  // interesting 16/32/64-bit little-endian words
      const size_t width = size_t(2) << rng.below(3);
      const uint64_t v = kWords[rng.below(std::size(kWords))];
      std::snprintf(note, sizeof note, "set %zu-byte word at %zu to 0x%llx; ", width, at, (unsigned long long)v);
      put_le(b, at, v, width);
    }
  }
  recipe += note;
}

// One edit of `b`, described in `recipe`.
void mutate_once(Bytes& b, const std::vector<Seed>& seeds, Rng& rng, std::string& recipe) {
  char note[160];
  const Seed& other = seeds[rng.below(seeds.size())];
  switch (b.empty() ? 7 : rng.below(8)) {
    case 0: {  // truncation
      const size_t n = rng.below(b.size());
      std::snprintf(note, sizeof note, "truncate to %zu; ", n);
      b.resize(n);
      break;
    }
    case 1:
    case 2:
    case 3:
      return mutate_in_place(b, rng, recipe);
    case 4: {  // chunk deletion
      const size_t at = rng.below(b.size()), n = 1 + rng.below(std::min<size_t>(b.size() - at, 256));
      std::snprintf(note, sizeof note, "delete %zu bytes at %zu; ", n, at);
      b.erase(at, n);
      break;
    }
    case 5: {  // chunk duplication
      const size_t from = rng.below(b.size()), n = 1 + rng.below(std::min<size_t>(b.size() - from, 256));
      const size_t to = rng.upto(b.size());
      std::snprintf(note, sizeof note, "copy %zu bytes at %zu to %zu; ", n, from, to);
      b.insert(to, b.substr(from, n));
      break;
    }
    case 6: {  // a chunk of another seed written over this one
      if (other.bytes.empty()) return mutate_in_place(b, rng, recipe);
      const size_t from = rng.below(other.bytes.size());
      const size_t n = 1 + rng.below(std::min<size_t>(other.bytes.size() - from, 256)), to = rng.below(b.size());
      std::snprintf(note, sizeof note, "overwrite at %zu with %zu bytes at %zu of %s; ", to, n, from,
                    fs::path(other.path).filename().c_str());
      b.replace(to, std::min(n, b.size() - to), other.bytes, from, n);
      break;
    }
    default: {  // splice: a prefix of this, a suffix of another seed
      const size_t keep = rng.upto(b.size()), from = rng.upto(other.bytes.size());
      std::snprintf(note, sizeof note, "splice first %zu bytes with %s from %zu; ", keep,
                    fs::path(other.path).filename().c_str(), from);
      b.resize(keep);
      b.append(other.bytes, from, Bytes::npos);
    }
  }
  recipe += note;
}

uint64_t le(const Bytes& b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(b[at + i])) << (8 * i);
  return v;
}

// The stored (uncompressed) entries of a zip archive whose central directory
// entries and local headers are valid enough to find: where each one's CRC-32
// and data lie. (A .pt archive stores every entry.)
struct ZipEntry {
  size_t crc_at, data_at, size;
};

std::vector<ZipEntry> zip_entries(const Bytes& b) {
  std::vector<ZipEntry> entries;
  if (b.compare(0, 4, "PK\x03\x04", 4) != 0 || b.size() < 22) return entries;
  size_t end = b.size() - 22;
  while (le(b, end, 4) != 0x06054b50) {
    if (end == 0 || b.size() - end > 22 + 65535) return entries;
    --end;
  }
  size_t at = size_t(le(b, end + 16, 4));
  const uint64_t count = le(b, end + 10, 2);
  for (uint64_t i = 0; i < count && at + 46 <= b.size() && le(b, at, 4) == 0x02014b50; ++i) {
    const uint64_t method = le(b, at + 10, 2), size = le(b, at + 20, 4), local = le(b, at + 42, 4);
    if (method == 0 && local + 30 <= b.size() && le(b, size_t(local), 4) == 0x04034b50) {
      const uint64_t data = local + 30 + le(b, size_t(local) + 26, 2) + le(b, size_t(local) + 28, 2);
      if (data <= b.size() && size <= b.size() - data) entries.push_back({at + 16, size_t(data), size_t(size)});
    }
    at += 46 + size_t(le(b, at + 28, 2) + le(b, at + 30, 2) + le(b, at + 32, 2));
  }
  return entries;
}

// Recomputes the CRC-32s in the central directory; returns how many.
size_t fix_zip_crcs(Bytes& b) {
  const std::vector<ZipEntry> entries = zip_entries(b);
  for (const ZipEntry& e : entries)
    put_le(b, e.crc_at, crc32_z(0, reinterpret_cast<const Bytef*>(b.data() + e.data_at), e.size), 4);
  return entries.size();
}

// Byte edits inside one entry of a zip (its size kept), its CRC-32 fixed;
// false where `b` has no nonempty stored entry.
bool mutate_zip_entry(Bytes& b, Rng& rng, std::string& recipe) {
  std::vector<ZipEntry> entries = zip_entries(b);
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](const ZipEntry& e) { return e.size == 0; }),
                entries.end());
  if (entries.empty()) return false;
  const ZipEntry e = entries[rng.below(entries.size())];
  Bytes data = b.substr(e.data_at, e.size);
  recipe += "in the entry at " + std::to_string(e.data_at) + ": ";
  mutate_in_place(data, rng, recipe);
  b.replace(e.data_at, e.size, data);
  put_le(b, e.crc_at, crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size()), 4);
  return true;
}

// ---- protobuf wire format (ONNX models, TensorProtos, GraphDefs): byte edits rarely leave a
// message that parses, so half of the mutations of one edit a field and re-encode the lengths ----
struct Field {
  uint64_t key = 0;             // field number << 3 | wire type
  uint64_t value = 0;           // varint, fixed32, fixed64
  Bytes bytes;                  // length-delimited
  std::vector<Field> children;  // the bytes, where they parse as a message
  bool message = false;
};

bool read_varint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const uint8_t c = uint8_t(in.front());
    in.remove_prefix(1);
    v |= uint64_t(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

// Parses a whole message; false unless every byte belongs to a field of a known wire type.
bool parse_message(std::string_view in, std::vector<Field>& out, int depth) {
  while (!in.empty()) {
    Field f;
    if (!read_varint(in, f.key) || (f.key >> 3) == 0) return false;
    switch (f.key & 7) {
      case 0:
        if (!read_varint(in, f.value)) return false;
        break;
      case 1:
      case 5: {
        const size_t n = (f.key & 7) == 1 ? 8 : 4;
        if (in.size() < n) return false;
        for (size_t i = 0; i < n; ++i) f.value |= uint64_t(uint8_t(in[i])) << (8 * i);
        in.remove_prefix(n);
        break;
      }
      case 2: {
        uint64_t n;
        if (!read_varint(in, n) || n > in.size()) return false;
        f.bytes = Bytes(in.substr(0, size_t(n)));
        in.remove_prefix(size_t(n));
        f.message = depth < 32 && !f.bytes.empty() && parse_message(f.bytes, f.children, depth + 1);
        if (!f.message) f.children.clear();
        break;
      }
      default:
        return false;
    }
    out.push_back(std::move(f));
  }
  return true;
}

void write_varint(Bytes& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += char(uint8_t(v) | 0x80);
  out += char(v);
}

void write_message(const std::vector<Field>& fields, Bytes& out) {
  for (const Field& f : fields) {
    write_varint(out, f.key);
    switch (f.key & 7) {
      case 0: write_varint(out, f.value); break;
      case 1:
      case 5:
        for (size_t i = 0; i < ((f.key & 7) == 1 ? 8u : 4u); ++i) out += char(uint8_t(f.value >> (8 * i)));
        break;
      default: {
        Bytes body;
        if (f.message) write_message(f.children, body);
        write_varint(out, (f.message ? body : f.bytes).size());
        out += f.message ? body : f.bytes;
      }
    }
  }
}

void collect(std::vector<Field>& fields, std::vector<std::pair<std::vector<Field>*, size_t>>& all) {
  for (size_t i = 0; i < fields.size(); ++i) {
    all.emplace_back(&fields, i);
    if (fields[i].message) collect(fields[i].children, all);
  }
}

// One edit of one field of a message; false where `b` is not one.
bool mutate_protobuf(Bytes& b, const std::vector<Seed>& seeds, Rng& rng, std::string& recipe) {
  static constexpr uint64_t kValues[] = {0, 1, 2, 3, 7, 8, 16, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff,
                                         0x80000000, 0xffffffff, 0x100000000, 0x7fffffffffffffffULL,
                                         0x8000000000000000ULL, ~0ULL, ~1ULL};
  std::vector<Field> fields;
  if (b.empty() || !parse_message(b, fields, 0)) return false;
  std::vector<std::pair<std::vector<Field>*, size_t>> all;
  collect(fields, all);
  auto [parent, index] = all[rng.below(all.size())];
  Field& f = (*parent)[index];
  char note[160];
  std::snprintf(note, sizeof note, "field %zu of %zu (number %llu, wire type %llu): ", index + 1, all.size(),
                (unsigned long long)(f.key >> 3), (unsigned long long)(f.key & 7));
  recipe += note;
  switch (rng.below(5)) {
    case 0:
      recipe += "delete; ";
      parent->erase(parent->begin() + ptrdiff_t(index));
      break;
    case 1:
      recipe += "repeat; ";
      parent->insert(parent->begin() + ptrdiff_t(index), Field(f));
      break;
    default:
      if ((f.key & 7) != 2) {
        const uint64_t v = rng.below(3) == 0 ? f.value + rng.below(5) - 2 : kValues[rng.below(std::size(kValues))];
        std::snprintf(note, sizeof note, "value 0x%llx; ", (unsigned long long)v);
        recipe += note;
        f.value = v;
      } else if (f.message && rng.below(4) != 0) {
        recipe += "repeat a random field in it; ";  // any field of the message, under this one
        const auto [from, at] = all[rng.below(all.size())];
        Field copy = (*from)[at];
        f.children.push_back(std::move(copy));
      } else {
        recipe += "bytes: ";
        f.message = false;  // f.bytes are still the children's encoding
        mutate_once(f.bytes, seeds, rng, recipe);
      }
  }
  b.clear();
  write_message(fields, b);
  return true;
}

// Mutated input `index`: a seed with one to three edits.
Bytes mutation(const std::vector<Seed>& seeds, uint64_t rng_seed, uint64_t index, std::string& recipe) {
  Rng rng{rng_seed * 0x2545f4914f6cdd1dULL + index};
  rng.next();
  const Seed& seed = seeds[rng.below(seeds.size())];
  Bytes b = seed.bytes;
  recipe = "mutation " + std::to_string(index) + " of " + fs::path(seed.path).filename().string() + ": ";
  // Half of them edit the structure (a protobuf's fields, a zip's entries) where the seed has one.
  const bool structured = rng.below(2) == 0;
  const size_t edits = 1 + rng.below(3);
  for (size_t i = 0; i < edits; ++i)
    if (!structured || !(mutate_protobuf(b, seeds, rng, recipe) || mutate_zip_entry(b, rng, recipe)))
      mutate_once(b, seeds, rng, recipe);
  if (!structured && rng.below(2) == 0 && !zip_entries(b).empty())
    recipe += "fix " + std::to_string(fix_zip_crcs(b)) + " zip CRCs; ";
  recipe.resize(recipe.size() - 2);
  return b;
}

// ---- running one input: what a crash, a sanitizer report or the watchdog prints ----
std::string program;
std::string last_input;  // where each input goes before it runs ("" = nowhere)
char current[1024];      // "input <hash> (<recipe>)": prepared before the input runs, for the handlers
std::atomic<bool> running{false};
std::atomic<int64_t> started_ns{0};

void write_stderr(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

void describe_current() {
  if (!running.load()) return;
  write_stderr("\n==== fuzz replay: failed on ");
  write_stderr(current);
  write_stderr("\n");
}

extern "C" void on_fatal_signal(int sig) {
  describe_current();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

bool write_file(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(b.data(), std::streamsize(b.size()));
  return bool(out);
}

void run_one(const Bytes& b, const std::string& what) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", (unsigned long long)fnv1a(b));
  std::string text = "input " + std::string(hash) + " (" + what + ", " + std::to_string(b.size()) + " bytes)";
  if (!last_input.empty()) {  // one open file rewritten in place: reopening costs milliseconds on ext4
    static const int fd = ::open(last_input.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::pwrite(fd, b.data(), b.size(), 0) != ssize_t(b.size()) || ::ftruncate(fd, off_t(b.size())) != 0) {
      std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), last_input.c_str());
      std::exit(2);
    }
    text += "; its bytes are in " + last_input + ", replay with: " + program + " " + last_input;
  }
  std::snprintf(current, sizeof current, "%s", text.c_str());
  started_ns.store(Clock::now().time_since_epoch().count());
  running.store(true);
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  running.store(false);
}

// Aborts the process, naming the input, when one runs longer than `limit`.
class Watchdog {
 public:
  explicit Watchdog(double limit) : limit_(limit), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
      if (!running.load()) continue;
      const double seconds =
          std::chrono::duration<double>(Clock::now().time_since_epoch() - Clock::duration(started_ns.load())).count();
      if (seconds > limit_ && running.load()) {
        std::fprintf(stderr, "\n==== fuzz replay: timeout: one input ran for more than %g s (-timeout)", limit_);
        describe_current();
        std::_Exit(70);
      }
    }
  }
  double limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [-runs=N] [-max_total_time=S] [-seed=N] [-timeout=S] [-only=I] "
               "[-last_input=PATH] [-save=PATH] DIR|FILE...\n",
               program.c_str(), why.c_str(), program.c_str());
  std::exit(2);
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usage("cannot read " + path);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
  program = argv[0];
  uint64_t runs = 100000, rng_seed = 1;
  double max_seconds = 3, timeout = 10;
  int64_t only = -1;
  std::string save;
  std::vector<Seed> seeds;
  bool any_directory = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto option = [&](std::string_view name, auto& value) {
      if (arg.rfind(name, 0) != 0) return false;
      const std::string text = arg.substr(name.size());
      char* end = nullptr;
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        value = text;
      } else if constexpr (std::is_same_v<std::decay_t<decltype(value)>, double>) {
        value = std::strtod(text.c_str(), &end);
      } else {
        value = std::decay_t<decltype(value)>(std::strtoll(text.c_str(), &end, 10));
      }
      if (end != nullptr && (text.empty() || *end != '\0')) usage("bad value in " + arg);
      return true;
    };
    if (option("-runs=", runs) || option("-max_total_time=", max_seconds) || option("-seed=", rng_seed) ||
        option("-timeout=", timeout) || option("-only=", only) || option("-last_input=", last_input) ||
        option("-save=", save))
      continue;
    if (arg.rfind("-", 0) == 0) usage("unknown option " + arg);
    if (fs::is_directory(arg)) {
      any_directory = true;
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path().string());
      std::sort(files.begin(), files.end());
      for (auto& f : files) seeds.push_back({f, read_file(f)});
    } else {
      seeds.push_back({arg, read_file(arg)});
    }
  }
  if (seeds.empty()) usage("no inputs");

  if (!save.empty()) {
    if (only < 0) usage("-save needs -only=I");
    std::string recipe;
    const Bytes b = mutation(seeds, rng_seed, uint64_t(only), recipe);
    if (!write_file(save, b)) usage("cannot write " + save);
    std::printf("%s (%zu bytes) written to %s\n", recipe.c_str(), b.size(), save.c_str());
    return 0;
  }

#ifdef NNVM_REPLAY_ASAN
  __sanitizer_set_death_callback(describe_current);  // ASan, UBSan (-fno-sanitize-recover) and LSan reports
  for (int sig : {SIGABRT, SIGFPE, SIGILL}) std::signal(sig, on_fatal_signal);  // ASan reports SIGSEGV itself
#else
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal_signal);
#endif
  Watchdog watchdog(timeout);

  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  if (only >= 0) {
    std::string recipe;
    const Bytes b = mutation(seeds, rng_seed, uint64_t(only), recipe);
    run_one(b, recipe);
    std::printf("%s: ran %s (%zu bytes)\n", program.c_str(), recipe.c_str(), b.size());
    return 0;
  }
  for (const Seed& s : seeds) run_one(s.bytes, "file " + s.path);
  const double seed_seconds = elapsed();
  uint64_t done = 0;
  if (any_directory) {
    std::string recipe;
    for (; done < runs && elapsed() < max_seconds; ++done) {
      const Bytes b = mutation(seeds, rng_seed, done, recipe);
      run_one(b, recipe + "; rerun with -only=" + std::to_string(done) + " -seed=" + std::to_string(rng_seed) +
                     " and the same DIR|FILE arguments");
    }
  }
  std::printf("%s: %zu files in %.2f s, %llu mutations (-seed=%llu) in %.2f s: no failure\n", program.c_str(),
              seeds.size(), seed_seconds, (unsigned long long)done, (unsigned long long)rng_seed,
              elapsed() - seed_seconds);
  return 0;
}
