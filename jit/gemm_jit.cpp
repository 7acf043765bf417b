#include "nnvm/jit/gemm_jit.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "nnvm/core/error.h"
#include "nnvm/core/knobs.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/kernel_dump.h"
#include "nnvm/jit/x86/gemm_kernel.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/kernels/cpu/gemm_int8.h"
#include "nnvm/kernels/cpu/gemm_prepack.h"

namespace nnvm::jit {

namespace {

using x86::GemmStore;
using x86::GemmTileCall;
using x86::GemmTileKernel;
using x86::GemmTileSpec;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

constexpr int kMaxRows = 18;
// Below this many multiply-adds a product is not worth timing: the
// candidates' default runs.
constexpr int64_t kTuneWork = int64_t(1) << 22;
constexpr int kTrialsPerCandidate = 2;
// The columns of C an epilogue call covers (GemmExtras::epilogue).
constexpr int64_t kEpilogueColumns = 512;

int lanes(Isa isa) { return isa == Isa::kAvx512 ? 16 : 8; }

// ---- compiled kernels: one per (ISA, rows, vectors), compiled at first use, kept for the process.

struct KernelTable {
  // [AVX-512][B by rows][u8s8][vectors][mr]
  std::atomic<const GemmTileKernel*> slot[2][2][2][3][kMaxRows + 1] = {};
  std::mutex mutex;
  std::vector<std::unique_ptr<GemmTileKernel>> owned;
};

KernelTable& kernels() {
  static KernelTable* table = new KernelTable;  // never destroyed: pool threads may run at exit
  return *table;
}

const GemmTileKernel& tile_kernel(Isa isa, int mr, int vectors, bool b_rows, bool u8s8 = false) {
  std::atomic<const GemmTileKernel*>& slot = kernels().slot[isa == Isa::kAvx512][b_rows][u8s8][vectors][mr];
  if (const GemmTileKernel* k = slot.load(std::memory_order_acquire)) return *k;
  std::lock_guard<std::mutex> lock(kernels().mutex);
  if (const GemmTileKernel* k = slot.load(std::memory_order_acquire)) return *k;
  const auto start = std::chrono::steady_clock::now();
  const GemmTileSpec spec{mr, vectors, b_rows, u8s8};
  auto kernel = std::make_unique<GemmTileKernel>(isa, spec);
  publish_kernel("gemm", spec.name(), isa, kernel->entry(), kernel->code_bytes(), spec.name());
  if (log_enabled("jit")) {
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "jit compile %.0f us %s %s (%zu bytes)\n", us, spec.name().c_str(), isa_name(isa),
                 kernel->code_bytes());
  }
  slot.store(kernel.get(), std::memory_order_release);
  kernels().owned.push_back(std::move(kernel));
  return *kernels().owned.back();
}

// ---- tile heights and tuning.

std::atomic<int>& forced_rows() {
  static std::atomic<int> mr{0};
  return mr;
}

// The tile heights tuning times, the default first (a table: looked up on every product).
const std::vector<int>& candidates(Isa isa) {
  // never destroyed: pool threads may multiply during exit
  static const auto* avx512 = new std::vector<int>{12, 14, 8};
  static const auto* avx2 = new std::vector<int>{6};
  return isa == Isa::kAvx512 ? *avx512 : *avx2;
}

struct Choice {
  int chosen = 0;  // the tile height; 0 while measuring
  int trials = 0;
  std::array<double, 4> best{};  // the fastest time of each candidate so far
};

struct Tuning {
  std::mutex mutex;
  std::string dir = knobs().cache_dir;
  std::unordered_map<std::string, Choice> choices;
  std::unordered_set<std::string> logged;
  bool loaded = false;
};

Tuning& tuning() {
  static Tuning* t = new Tuning;
  return *t;
}

std::string tuning_file(Isa isa) {
  const std::string& dir = tuning().dir;
  if (dir.empty()) return {};
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016" PRIx64, kernel_hash(cpu::cpu_features().model));
  return dir + "/gemm-" + isa_name(isa) + "-" + hash + ".txt";
}

// Reads the choices earlier processes made on this CPU (the tuning lock held).
void load_tuning(Tuning& t, Isa isa) {
  if (t.loaded) return;
  t.loaded = true;
  const std::string path = tuning_file(isa);
  if (path.empty()) return;
  std::ifstream in(path);
  const std::vector<int>& allowed = candidates(isa);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.rfind('\t');
    if (tab == std::string::npos) continue;
    const int mr = std::atoi(line.c_str() + tab + 1);
    if (std::find(allowed.begin(), allowed.end(), mr) == allowed.end()) continue;  // stale or damaged
    t.choices[line.substr(0, tab)].chosen = mr;
  }
}

void save_choice(Isa isa, const std::string& key, int mr) {
  const std::string path = tuning_file(isa);
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  if (out) out << key << '\t' << mr << '\n';
  if (!out && log_enabled("jit")) std::fprintf(stderr, "jit gemm: cannot write %s\n", path.c_str());
}

int lg(int64_t v) {
  int bits = 0;
  while ((int64_t(1) << bits) < v) ++bits;
  return bits;
}

// The tile height of a product too small to time: the candidate that pads
// the fewest rows (64 rows: 8, not 12, whose last tile would be 4 rows of
// 12), the default on a tie. Small products are where the padded tile
// costs most: a convolution's 64 output channels, image by image.
int untuned_rows(const std::vector<int>& tiles, int64_t m) {
  int best = tiles[0];
  for (int mr : tiles)
    if (round_up(m, mr) < round_up(m, best)) best = mr;
  return best;
}

// ---- blocking.

const char* layout(cpu::MatrixRef<float> x) {
  if (x.cs == 1) return "rows";
  if (x.rs == 1) return "cols";
  return "strided";
}

struct Blocking {
  int nr;
  int64_t kc_max, mc_elems, nc_max;
  int64_t kc_table_max;  // kc where B's rows come from a table
};

Blocking blocking(Isa isa, int threads) {
  const cpu::CpuFeatures& cpu = cpu::cpu_features();
  Blocking b{2 * lanes(isa), 0, 0, 0, 0};
  // B's micro-panel (kc × NR floats) a 32nd of L2 (64 KiB of 2 MiB: kc 512
  // with AVX-512). Measured on a Xeon with 48 KiB of L1 and 2 MiB of L2,
  // 1024³: kc 384..512 ran 5-10% faster than a micro-panel in half of L1
  // (kc 171): the panel streams from L2 well, and fewer k blocks mean
  // fewer passes over C.
  b.kc_max = std::clamp<int64_t>(cpu.l2_bytes / 32 / (b.nr * 4) / 16 * 16, 128, 512);
  // B's rows read in place through a table (a convolution's windows) are
  // scattered runs, each touching 3 lines (2 vectors, unaligned), that the
  // prefetchers do not follow from L2 as they follow a packed panel: the
  // micro-panel is kept in half of L1 instead (48 KiB: kc 128). Measured on
  // the Xeon above, 3×3 64→64 at 56×56, one image: 10% faster than kc 288.
  b.kc_table_max = std::clamp<int64_t>(cpu.l1d_bytes / 2 / (3 * 64) / 16 * 16, 32, b.kc_max);
  // The rows of A that pass each micro-panel of B, as a count of floats
  // (mc = mc_elems / kc): as many as L2 holds. Each block of rows streams the
  // whole packed panel of B again; on the Xeon above, 2048 x 1024 x 1024 on
  // 2 threads ran 15-25% faster with every row in one block than with a
  // block of half or a quarter of L2.
  b.mc_elems = std::max<int64_t>(cpu.l2_bytes / 4, 64 * b.kc_max);
  // A packed panel of B: a thread's share of half of L3.
  b.nc_max = std::clamp<int64_t>(cpu.l3_bytes / 2 / std::max(threads, 1) / 4 / b.kc_max / b.nr * b.nr, 4 * b.nr,
                                 8192);
  return b;
}

// The thread grid: the tm × tn split of C whose slowest block costs least,
// counting a block's multiply-adds (32 a cycle) and the copies it makes
// (packing its columns of B, reading its rows of A once per panel of B).
std::pair<int, int> thread_grid(int64_t m, int64_t n, int64_t k, int mr, int nr, int64_t nc, int threads) {
  std::pair<int, int> best{1, threads};
  double best_cost = std::numeric_limits<double>::infinity();
  for (int tm = 1; tm <= threads; ++tm) {
    if (threads % tm != 0) continue;
    const int tn = threads / tm;
    const double rows = double(round_up(ceil_div(m, tm), mr)), cols = double(round_up(ceil_div(n, tn), nr));
    const double cost = rows * cols * double(k) / 32 + 0.5 * double(k) * cols +
                        0.25 * double(k) * rows * double(ceil_div(int64_t(cols), nc));
    if (cost < best_cost) best_cost = cost, best = {tm, tn};
  }
  return best;
}

// ---- the product.

struct Product {
  int64_t m, n, k;
  cpu::MatrixRef<float> a, b;
  cpu::GemmExtras extras;  // B's rows by a table (b unused), an epilogue on finished columns
  float beta;
  float* c;
  int64_t ldc;
  GemmPlan plan;
  Isa isa;
  const float* packed_b = nullptr;  // B kept packed (cpu::gemm_packed_b): whole-k micro-panels
};

// Rows [0, rows) × [0, kc) of A into panels of `mr` rows, each panel column
// by column (a last panel of fewer rows is as tall as its rows).
void pack_a(const float* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, int mr, float* out) {
  for (int64_t i0 = 0; i0 < rows; i0 += mr) {
    const int64_t h = std::min<int64_t>(mr, rows - i0);
    const float* src = a + i0 * rs;
    if (rs == 1) {
      for (int64_t p = 0; p < kc; ++p) std::copy(src + p * cs, src + p * cs + h, out + p * h);
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < h; ++i) out[p * h + i] = src[i * rs + p * cs];
    }
    out += h * kc;
  }
}

// Rows [p0, p0 + kc) of B given by a row table, columns [j0, j0 + cols),
// into micro-panels of `nr` columns as gemm_pack_b lays them out. A last
// panel is copied whole: a table's rows are readable past n
// (cpu::kRowTableSlack), and columns past `cols` are never stored. A
// table in segments is copied a segment's piece at a time, zeros past n.
void pack_b_rows(const cpu::RowTable& b, int64_t n, int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr,
                 float* out) {
  for (int64_t jr = 0; jr < cols; jr += nr, out += nr * kc) {
    const int64_t first = j0 + jr;
    const int64_t segment = b.segment;
    if (segment == 0 || (first / segment == (first + nr - 1) / segment && first + nr <= n)) {
      const float* base = segment ? b.base + first / segment * b.segment_stride + first % segment : b.base + first;
      for (int64_t p = 0; p < kc; ++p) std::memcpy(out + p * nr, base + b.rows[p0 + p], size_t(nr) * 4);
      continue;
    }
    for (int64_t j = first; j < first + nr;) {  // the panel's pieces, segment by segment
      const int64_t end = j < n ? std::min({first + nr, n, (j / segment + 1) * segment}) : first + nr;
      const int64_t len = end - j;
      float* dst = out + (j - first);
      if (j >= n) {
        for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * nr, dst + p * nr + len, 0.f);
      } else {
        const float* base = b.base + j / segment * b.segment_stride + j % segment;
        for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * nr, base + b.rows[p0 + p], size_t(len) * 4);
      }
      j += len;
    }
  }
}

// C[m0:m1, n0:n1] on the calling thread.
void run_block(const Product& x, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const GemmPlan& plan = x.plan;
  const int mr = plan.mr, nr = plan.nr, L = lanes(x.isa), vector_bytes = L * 4;
  const int64_t nkb = ceil_div(x.k, plan.kc);  // k in nkb blocks as equal as can be
  // Copied rows: an odd number of cache lines apart, so the rows of a tile fall in different sets.
  const int64_t a_stride = (ceil_div(plan.kc, 16) | 1) * 16;
  float* abuf = plan.a == GemmA::kInPlace ? nullptr : cpu::gemm_scratch<float>(0, round_up(plan.mc, mr) * a_stride);
  const cpu::RowTable* table = plan.b_table_packed ? nullptr : x.extras.row_table_b;  // B read in place by it
  float* bbuf = table || x.packed_b ? nullptr
                                    : cpu::gemm_scratch<float>(1, plan.kc * round_up(std::min(plan.nc, n1 - n0), nr));
  GemmTileCall call;
  const cpu::GemmEpilogue* epilogue = x.extras.epilogue;
  for (int64_t jc = n0; jc < n1; jc += plan.nc) {
    const int64_t ncb = std::min(plan.nc, n1 - jc);
    int64_t pc = 0;
    for (int64_t kb = 0; kb < nkb; ++kb) {
      const int64_t kcb = x.k / nkb + (kb < x.k % nkb ? 1 : 0);
      call.kc = kcb;
      if (pc > 0) call.store = GemmStore::kAccumulate;
      else if (x.beta == 0.f) call.store = GemmStore::kOverwrite;
      else if (x.beta == 1.f) call.store = GemmStore::kAccumulate;
      else call.store = GemmStore::kBeta;
      call.beta = x.beta;
      const float* bpanel = table ? table->base + jc : x.b.data + pc * x.b.rs + jc * x.b.cs;
      call.b_rows = table ? table->rows + pc : nullptr;
      // Packed: every micro-panel; in place: only a last, narrower one,
      // whose full vectors would read past B (B by a table: none, its
      // rows are readable past n).
      if (x.packed_b) {
        // (panels packed once, kept between products)
      } else if (plan.b_table_packed)
        pack_b_rows(*x.extras.row_table_b, x.n, pc, kcb, jc, ncb, nr, bbuf);
      else if (!table)
        for (int64_t jr = plan.b_direct ? ncb / nr * nr : 0; jr < ncb; jr += nr)
          cpu::gemm_pack_b(vector_bytes, bpanel + jr * x.b.cs, x.b.rs, x.b.cs, kcb, std::min<int64_t>(nr, ncb - jr),
                           bbuf + jr * kcb);
      for (int64_t ic = m0; ic < m1; ic += plan.mc) {
        const int64_t mcb = std::min(plan.mc, m1 - ic);
        const float* ablock = x.a.data + ic * x.a.rs + pc * x.a.cs;
        if (plan.a == GemmA::kPanels) pack_a(ablock, x.a.rs, x.a.cs, mcb, kcb, mr, abuf);
        if (plan.a == GemmA::kCopiedRows && x.extras.row_table_a) {
          const cpu::RowTable& rows = *x.extras.row_table_a;
          for (int64_t i = 0; i < mcb; ++i)
            std::memcpy(abuf + i * a_stride, rows.base + rows.rows[ic + i] + pc, size_t(kcb) * 4);
        } else if (plan.a == GemmA::kCopiedRows) {
          for (int64_t i = 0; i < mcb; ++i) std::memcpy(abuf + i * a_stride, ablock + i * x.a.rs, size_t(kcb) * 4);
        }
        call.ldc_bytes = x.ldc * 4;
        auto tile = [&](int64_t ir, int64_t jr) {
          const int cols = int(std::min<int64_t>(nr, ncb - jr)), rows = int(std::min<int64_t>(mr, mcb - ir));
          if (table) {
            call.b = bpanel + jr;
          } else if (x.packed_b) {
            call.b = x.packed_b + (jc + jr) / nr * x.k * nr + pc * nr;
            call.b_k_bytes = nr * 4;
          } else if (plan.b_direct && cols == nr) {
            call.b = bpanel + jr;
            call.b_k_bytes = x.b.rs * 4;
          } else {
            call.b = bbuf + jr * kcb;
            call.b_k_bytes = nr * 4;
          }
          call.cols = cols;
          if (plan.a == GemmA::kInPlace) {
            call.a = ablock + ir * x.a.rs;
            call.a_row_bytes = x.a.rs * 4;
            call.a_k_bytes = 4;
          } else if (plan.a == GemmA::kCopiedRows) {
            call.a = abuf + ir * a_stride;
            call.a_row_bytes = a_stride * 4;
            call.a_k_bytes = 4;
          } else {
            call.a = abuf + ir * kcb;
            call.a_row_bytes = 4;
            call.a_k_bytes = rows * 4;
          }
          call.c = x.c + (ic + ir) * x.ldc + jc + jr;
          tile_kernel(x.isa, rows, cols > L ? 2 : 1, table != nullptr).run(call);
        };
        // B's micro-panel stays in L1/L2 while A's row tiles pass it. After
        // the last k block, C's columns are final a panel at a time: the
        // epilogue runs on every kEpilogueColumns of them (mcb rows) while
        // they are in L2. Narrower calls cost more than they save: per
        // register tile the epilogue took 2.7x its time in one pass over C,
        // per micro-panel (32 columns) 2.5x (each call sets up its constants
        // and each row its operands again), in the MLP step's gelu backward.
        int64_t settled = 0;  // columns [0, settled) of this block have had their epilogue
        for (int64_t jr = 0; jr < ncb; jr += nr) {
          for (int64_t ir = 0; ir < mcb; ir += mr) tile(ir, jr);
          const int64_t done = std::min<int64_t>(jr + nr, ncb);
          if (epilogue && kb == nkb - 1 && (done - settled >= kEpilogueColumns || done == ncb)) {
            epilogue->apply(epilogue->ctx, ic, ic + mcb, jc + settled, jc + done);
            settled = done;
          }
        }
      }
      pc += kcb;
    }
  }
}

void run_product(const Product& x) {
  const GemmPlan& plan = x.plan;
  const int64_t rows = round_up(ceil_div(x.m, plan.tm), plan.mr), cols = round_up(ceil_div(x.n, plan.tn), plan.nr);
  const int blocks = plan.tm * plan.tn;
  auto block = [&](int64_t t) {
    const int64_t m0 = (t / plan.tn) * rows, n0 = (t % plan.tn) * cols;
    if (m0 < x.m && n0 < x.n) run_block(x, m0, std::min(x.m, m0 + rows), n0, std::min(x.n, n0 + cols));
  };
  if (blocks == 1) return block(0);
  parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) block(t);
  });
}

// Whether `rows` rows `stride` bytes apart, read in place along k, fall in
// enough different sets of L1 (64 sets of 64-byte lines, 8 to 12 ways) to
// stay there beside B's micro-panel: at most 4 rows share a set. Rows 4 KiB
// apart (a 1024-float leading dim) all map to the same sets and evict each
// other: that A is copied instead. Rows 9 KiB apart (a convolution's 3×3
// taps over 256 channels) share a set 3 to a set: in place, where copying
// the weights each call was a tenth of a ResNet's inference at batch 1.
bool rows_spread_over_l1(int64_t stride, int rows) {
  std::array<int, 64> in_set{};
  for (int i = 0; i < rows; ++i)
    if (++in_set[size_t((int64_t(i) * stride / 64) % 64)] > 4) return false;
  return true;
}

GemmPlan make_plan(Isa isa, int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b,
                   bool a_table, bool b_table, bool b_segments, int threads, int mr) {
  const Blocking blk = blocking(isa, threads);
  GemmPlan plan;
  plan.mr = mr;
  plan.nr = blk.nr;
  // B's rows by a table are read in place, a k block's runs kept in L1 (kc
  // small), while A is small. An A past half of L2 (a convolution's weights
  // over 128 or more channels) would then stream from L3 in short runs of
  // each row, once for each k block, so those tables are packed a k block
  // at a time like any B, at the packed panels' kc. On a Zen 3 core (512
  // KiB of L2), ResNet-18's 3×3 layers at 28×28 to 7×7, batch 1: 62-72 →
  // 69-75 GFLOP/s (the last ones with their images in one band,
  // kernels/cpu/conv_direct.cpp); at 56×56 over 64 channels (A 147 KB) in
  // place stays faster (67 against 60 at batch 8).
  plan.b_table_packed =
      b_table && (b_segments || m * k * int64_t(sizeof(float)) > cpu::cpu_features().l2_bytes / 2);
  const int64_t kc_max = b_table && !plan.b_table_packed ? blk.kc_table_max : blk.kc_max;
  plan.kc = ceil_div(k, ceil_div(k, kc_max));
  plan.nc = blk.nc_max;
  std::tie(plan.tm, plan.tn) = thread_grid(m, n, k, mr, plan.nr, plan.nc, threads);
  const int64_t block_rows = ceil_div(m, plan.tm);
  plan.mc = std::max<int64_t>(mr, blk.mc_elems / plan.kc / mr * mr);
  plan.mc = std::min(plan.mc, round_up(block_rows, mr));
  plan.nc = std::min(plan.nc, round_up(ceil_div(n, plan.tn), plan.nr));
  if (a.cs == 1) plan.a = rows_spread_over_l1(a.rs * 4, mr) ? GemmA::kInPlace : GemmA::kCopiedRows;
  if (a_table) plan.a = GemmA::kCopiedRows;  // each row copied from where the table says
  // B in place when its rows are contiguous and one row tile meets each panel.
  plan.b_direct = b.cs == 1 && block_rows <= mr;
  plan.b_table = b_table;
  return plan;
}

}  // namespace

std::string GemmPlan::describe() const {
  std::ostringstream s;
  s << mr << "x" << nr << " tile, kc " << kc << " mc " << mc << " nc " << nc << ", threads " << tm << "x" << tn
    << ", A " << (a == GemmA::kInPlace ? "in place" : a == GemmA::kCopiedRows ? "rows copied" : "packed") << ", B " << (b_table_packed ? "rows by table, packed" : b_table ? "rows by table" : b_direct ? "in place" : "packed");
  return s.str();
}

GemmPlan gemm_plan(int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b,
                   int threads) {
  const Isa isa = active_isa();
  if (isa == Isa::kPortable) return GemmPlan{};
  const int forced = forced_rows().load(std::memory_order_relaxed);
  return make_plan(isa, m, n, k, a, b, false, false, false, threads, forced ? forced : candidates(isa)[0]);
}

std::vector<int> gemm_tile_rows_candidates() {
  const Isa isa = active_isa();
  return isa == Isa::kPortable ? std::vector<int>{} : candidates(isa);
}

void set_gemm_tile_rows(int mr) {
  const Isa isa = active_isa();
  NNVM_CHECK(mr == 0 || GemmTileKernel::fits(isa, mr, 2), "set_gemm_tile_rows", "a tile of ", mr,
             " rows does not fit ", isa_name(isa), "'s registers (at most ", GemmTileKernel::max_rows(isa, 2), ")");
  forced_rows().store(mr, std::memory_order_relaxed);
}

void reset_gemm_tuning() {
  Tuning& t = tuning();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.choices.clear();
  t.logged.clear();
  t.loaded = false;
}

void set_gemm_tuning_dir(std::string dir) {
  reset_gemm_tuning();
  std::lock_guard<std::mutex> lock(tuning().mutex);
  tuning().dir = std::move(dir);
}

std::string gemm_tuning_file() {
  std::lock_guard<std::mutex> lock(tuning().mutex);
  return tuning_file(active_isa());
}

int gemm_tuned_rows(const std::string& key) {
  Tuning& t = tuning();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.choices.find(key);
  return it == t.choices.end() ? 0 : it->second.chosen;
}

namespace {

void gemm_product(Isa isa, int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b,
                  const cpu::GemmExtras& extras, float beta, float* c, int64_t ldc) {
  const int threads = m * n * k < cpu::kGemmParallelWork ? 1 : parallel_threads();
  const std::vector<int>& tiles = candidates(isa);
  const int forced = forced_rows().load(std::memory_order_relaxed);
  const bool tune = forced == 0 && tiles.size() > 1 && m * n * k >= kTuneWork;
  static const bool log = log_enabled("jit");  // NNVM_LOG is read once
  // B kept packed where it is a registered constant (a loaded model's weights)
  const std::shared_ptr<const float> kept =
      extras.row_table_b ? nullptr : cpu::gemm_packed_b(b.data, b.rs, b.cs, k, n, lanes(isa) * 4);
  auto product = [&](int mr) {
    return Product{m, n, k, a, b, extras, beta, c, ldc,
                   make_plan(isa, m, n, k, a, b, extras.row_table_a != nullptr, extras.row_table_b != nullptr,
                             extras.row_table_b && extras.row_table_b->segment > 0, threads, mr),
                   isa, kept.get()};
  };
  if (!tune && !log) return run_product(product(forced ? forced : untuned_rows(tiles, m)));
  std::ostringstream text;
  text << isa_name(isa) << " m" << lg(m) << " n" << lg(n) << " k" << lg(k)
       << " a:" << (extras.row_table_a ? "table" : layout(a))
       << " b:" << (extras.row_table_b ? "table" : layout(b)) << " t" << threads;
  const std::string key = text.str();
  Tuning& t = tuning();
  int trial = -1, chosen = 0;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    load_tuning(t, isa);
    Choice& choice = t.choices[key];
    if (!tune) choice.chosen = forced ? forced : untuned_rows(tiles, m);
    chosen = choice.chosen;
    if (!chosen) trial = choice.trials++;
  }
  if (chosen) {
    const Product x = product(chosen);
    if (log) {
      std::lock_guard<std::mutex> lock(t.mutex);
      if (t.logged.insert(key).second)
        std::fprintf(stderr, "jit gemm %" PRId64 "x%" PRId64 "x%" PRId64 " [%s]: %s%s\n", m, n, k, key.c_str(),
                     x.plan.describe().c_str(), x.packed_b ? " (kept packed)" : "");
    }
    return run_product(x);
  }
  const size_t candidate = size_t(trial) % tiles.size();
  const auto start = std::chrono::steady_clock::now();
  run_product(product(tiles[candidate]));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(t.mutex);
  Choice& choice = t.choices[key];
  if (choice.chosen) return;
  double& best = choice.best[candidate];
  if (best == 0 || seconds < best) best = seconds;
  if (choice.trials < kTrialsPerCandidate * int(tiles.size())) return;
  for (size_t i = 0; i < tiles.size(); ++i)
    if (choice.best[i] == 0) return;  // a trial still running on another thread
  size_t fastest = 0;
  for (size_t i = 1; i < tiles.size(); ++i)
    if (choice.best[i] < choice.best[fastest]) fastest = i;
  choice.chosen = tiles[fastest];
  save_choice(isa, key, choice.chosen);
  if (log) {
    std::ostringstream measured;
    for (size_t i = 0; i < tiles.size(); ++i)
      measured << (i ? ", " : "") << tiles[i] << " rows " << choice.best[i] * 1e3 << " ms";
    std::fprintf(stderr, "jit gemm tuned [%s]: %d rows (%s)\n", key.c_str(), choice.chosen, measured.str().c_str());
  }
}

}  // namespace

bool jit_gemm(int64_t m, int64_t n, int64_t k, cpu::MatrixRef<float> a, cpu::MatrixRef<float> b, float beta,
              float* c, int64_t ldc, const cpu::GemmExtras& extras) {
  const Isa isa = active_isa();
  if (isa == Isa::kPortable) return false;
  // B by a table with nothing to compute: done (cpu::gemm_reads_row_tables asks so)
  if ((extras.row_table_a || extras.row_table_b) && (m == 0 || n == 0)) return true;
  if (m <= 0 || n <= 0 || k <= 0) return false;
  // the few-row products' order of sums is the C++ kernels' (gemm_adds_c_last)
  if (!extras.row_table_a && !extras.row_table_b && cpu::gemm_takes_few_rows(m, n, k, a.cs, b.rs, b.cs)) return false;
  gemm_product(isa, m, n, k, a, b, extras, beta, c, ldc);
  return true;
}

// ---- uint8 · int8 (kernels/cpu/gemm_int8.h).

namespace {

constexpr int64_t kQuadBytes = cpu::kInt8PanelCols * 4;  // a row of a packed panel

void run_u8s8_block(Isa isa, int mr, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k, const uint8_t* a,
                    int64_t lda, const int8_t* packed_b, void* c, int64_t ldc, const cpu::Int8Dequant* dq) {
  const int64_t quads = ceil_div(k, 4), L = lanes(isa);
  GemmTileCall call;
  call.a_row_bytes = lda;
  call.a_k_bytes = 4;
  call.b_k_bytes = kQuadBytes;
  call.kc = quads;
  call.ldc_bytes = ldc * 4;
  call.store = dq ? GemmStore::kDequantize : GemmStore::kOverwrite;
  // A panel of B (32 columns, every quad: 32·k bytes) stays in L1 or L2
  // while the block's row tiles pass it.
  for (int64_t j = n0; j < n1; j += cpu::kInt8PanelCols) {
    const int cols = int(std::min<int64_t>(cpu::kInt8PanelCols, n1 - j));
    call.b = reinterpret_cast<const float*>(packed_b + j / cpu::kInt8PanelCols * quads * kQuadBytes);
    call.cols = cols;
    if (dq) {
      call.col_offset = dq->col_offset + j;
      call.col_scale = dq->col_scale + j;
      call.bias = dq->bias + j;
    }
    for (int64_t i = m0; i < m1; i += mr) {
      const int rows = int(std::min<int64_t>(mr, m1 - i));
      call.a = reinterpret_cast<const float*>(a + i * lda);
      call.c = static_cast<float*>(c) + i * ldc + j;
      tile_kernel(isa, rows, cols > L ? 2 : 1, false, true).run(call);
    }
  }
}

}  // namespace

bool jit_gemm_u8s8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_b, void* c,
                   int64_t ldc, const cpu::Int8Dequant* dq) {
  const Isa isa = active_isa();
  if (isa != Isa::kAvx512 || !cpu::cpu_features().avx512_vnni || k <= 0 || k > cpu::kInt8MaxK) return false;
  const int threads = m * n * k < 4 * cpu::kGemmParallelWork ? 1 : parallel_threads();
  // 12 rows: per quad, 24 vpdpbusd against 14 loads. 8-row tiles (the fewest padded rows
  // at m = 256) re-read B's panel half again as often: 10-20% slower at 256 x 4096 x 1024 on
  // the development Xeon. Fewer than 4 tiles' rows: the height that pads least.
  const int mr = m >= 48 ? 12 : untuned_rows(candidates(isa), m);
  const int nr = int(cpu::kInt8PanelCols);
  int tm = 1, tn = 1;
  std::tie(tm, tn) = thread_grid(m, n, k / 4, mr, nr, round_up(n, nr), threads);  // B in one panel of every column
  const int64_t rows = round_up(ceil_div(m, tm), mr), cols = round_up(ceil_div(n, tn), nr);
  static const bool log = log_enabled("jit");
  if (log) {
    Tuning& t = tuning();
    std::lock_guard<std::mutex> lock(t.mutex);
    const std::string key = "u8s8 " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (t.logged.insert(key).second)
      std::fprintf(stderr, "jit gemm %s: avx512_vnni (vpdpbusd), %dx%d tile, threads %dx%d, %s\n", key.c_str(), mr,
                   nr, tm, tn, dq ? "dequantized to float32" : "int32");
  }
  auto block = [&](int64_t t) {
    const int64_t m0 = (t / tn) * rows, n0 = (t % tn) * cols;
    if (m0 < m && n0 < n)
      run_u8s8_block(isa, mr, m0, std::min(m, m0 + rows), n0, std::min(n, n0 + cols), k, a, lda, packed_b, c, ldc,
                     dq);
  };
  if (tm * tn == 1) {
    block(0);
    return true;
  }
  parallel_for(0, tm * tn, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) block(t);
  });
  return true;
}

namespace {
// cpu::gemm's and cpu::gemm_u8s8's provider from the moment the library is loaded.
const bool registered = (cpu::set_gemm_provider(&jit_gemm), cpu::set_int8_gemm_provider(&jit_gemm_u8s8), true);
}  // namespace

}  // namespace nnvm::jit
