// The JIT GEMM (jit/gemm_jit.h) against a naive loop in double: random
// shapes (1..300 in each dim, ragged edges, M = 1, small K), every layout of
// A and B (row-major, transposed, strided with gaps), beta 0, 1 and another,
// every tile height tuning may pick, on every ISA this CPU has; every operand
// ends against an inaccessible page, so a kernel touching one element past
// A, B or C's tile faults. Also: results bit-identical across repeats, tile
// heights and thread counts; tuning picks a height once per shape class and
// persists it; the few-row products stay with the C++ kernels.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "isa_scope.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/jit/gemm_jit.h"
#include "nnvm/jit/x86/gemm_kernel.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using cpu::MatrixRef;

// `count` floats whose last one ends the last readable page.
class GuardedFloats {
 public:
  explicit GuardedFloats(int64_t count) {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    const size_t bytes = size_t(std::max<int64_t>(count, 1)) * sizeof(float);
    readable_ = (bytes + page_ - 1) / page_ * page_;
    base_ = static_cast<char*>(mmap(nullptr, readable_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + readable_, page_, PROT_NONE), 0);
    data_ = reinterpret_cast<float*>(base_ + readable_ - bytes);
  }
  ~GuardedFloats() { munmap(base_, readable_ + page_); }
  GuardedFloats(const GuardedFloats&) = delete;
  GuardedFloats& operator=(const GuardedFloats&) = delete;
  float* data() const { return data_; }

 private:
  size_t page_ = 0, readable_ = 0;
  char* base_ = nullptr;
  float* data_ = nullptr;
};

enum class Layout { kRows, kCols, kStrided };
const char* name(Layout l) { return l == Layout::kRows ? "rows" : l == Layout::kCols ? "cols" : "strided"; }

// A rows × cols operand in `layout`, its values random, in guarded memory.
struct Operand {
  Operand(int64_t rows, int64_t cols, Layout layout, std::mt19937& rng) {
    if (layout == Layout::kRows) rs = cols + (cols % 3 == 0 ? 5 : 0), cs = 1;  // sometimes rows with a gap
    else if (layout == Layout::kCols) rs = 1, cs = rows;
    else rs = 2 * cols + 1, cs = 2;
    const int64_t span = (rows - 1) * rs + (cols - 1) * cs + 1;
    mem = std::make_unique<GuardedFloats>(span);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < span; ++i) mem->data()[i] = u(rng);
  }
  MatrixRef<float> ref() const { return {mem->data(), rs, cs}; }
  float at(int64_t i, int64_t j) const { return mem->data()[i * rs + j * cs]; }
  std::unique_ptr<GuardedFloats> mem;
  int64_t rs = 0, cs = 0;
};

struct Case {
  int64_t m, n, k;
  Layout la, lb;
  float beta;
};

// Runs the case through the JIT (which must take it) and checks every element against double sums.
void check(const Case& t, std::mt19937& rng) {
  SCOPED_TRACE(::testing::Message() << t.m << "x" << t.n << "x" << t.k << " A " << name(t.la) << " B " << name(t.lb)
                                    << " beta " << t.beta);
  const Operand a(t.m, t.k, t.la, rng), b(t.k, t.n, t.lb, rng);
  const int64_t ldc = t.n + (t.n % 2);
  GuardedFloats c((t.m - 1) * ldc + t.n);
  std::vector<float> before(size_t((t.m - 1) * ldc + t.n));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& v : before) v = u(rng);
  if (t.beta == 0.f)  // beta 0 never reads C: NaN there must not leak in
    for (float& v : before) v = NAN;
  std::copy(before.begin(), before.end(), c.data());
  ASSERT_TRUE(jit_gemm(t.m, t.n, t.k, a.ref(), b.ref(), t.beta, c.data(), ldc));
  int64_t bad = 0;
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      double want = 0, scale = 0;
      for (int64_t p = 0; p < t.k; ++p) {
        want += double(a.at(i, p)) * double(b.at(p, j));
        scale += std::abs(double(a.at(i, p)) * double(b.at(p, j)));
      }
      if (t.beta != 0.f) want += double(t.beta) * double(before[size_t(i * ldc + j)]);
      const double got = c.data()[i * ldc + j];
      if (!(std::abs(got - want) <= 1e-5 * (scale + 1)) && bad++ < 3)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << want;
    }
  EXPECT_EQ(bad, 0);
  // The gaps between C's rows are untouched.
  for (int64_t i = 0; i + 1 < t.m; ++i)
    for (int64_t j = t.n; j < ldc; ++j) {
      const float old = before[size_t(i * ldc + j)], now = c.data()[i * ldc + j];
      EXPECT_TRUE(std::memcmp(&old, &now, sizeof(float)) == 0) << "gap (" << i << ", " << j << ") written";
    }
}

class TileRowsGuard {
 public:
  explicit TileRowsGuard(int mr) { set_gemm_tile_rows(mr); }
  ~TileRowsGuard() { set_gemm_tile_rows(0); }
};

std::vector<Case> random_cases(int count, uint64_t seed) {
  std::mt19937 rng{uint32_t(seed)};
  std::uniform_int_distribution<int64_t> dim(1, 300);
  std::vector<Case> cases;
  const Layout layouts[] = {Layout::kRows, Layout::kCols, Layout::kStrided};
  const float betas[] = {0.f, 1.f, 0.5f};
  for (int i = 0; i < count; ++i) {
    Case t{dim(rng), dim(rng), dim(rng), layouts[i % 3], layouts[(i / 3) % 3], betas[(i / 9) % 3]};
    // the C++ kernels' domain (Operand's strides: rows, columns, strided)
    const int64_t a_cs = t.la == Layout::kRows ? 1 : t.la == Layout::kCols ? t.m : 2;
    const int64_t b_rs = t.lb == Layout::kRows ? t.n : t.lb == Layout::kCols ? 1 : 2 * t.n + 1;
    const int64_t b_cs = t.lb == Layout::kRows ? 1 : t.lb == Layout::kCols ? t.k : 2;
    if (cpu::gemm_takes_few_rows(t.m, t.n, t.k, a_cs, b_rs, b_cs)) t.m += 6;
    cases.push_back(t);
  }
  return cases;
}

TEST(GemmJit, MatchesNaiveOnRandomShapesLayoutsAndBetas) {
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    SCOPED_TRACE(isa_name(isa));
    std::mt19937 rng(7);
    for (const Case& t : random_cases(27, 11)) check(t, rng);
  }
}

TEST(GemmJit, EdgeShapes) {
  const Case cases[] = {
      {1, 4000, 64, Layout::kCols, Layout::kCols, 0.f},  // M = 1, B transposed (GEMV-like; from 2^18
                                                         // multiply-adds the C++ kernels' dot products)
      {6, 33, 1, Layout::kRows, Layout::kRows, 1.f},     // K = 1
      {300, 1, 300, Layout::kRows, Layout::kRows, 0.f},  // N = 1
      {300, 17, 3, Layout::kCols, Layout::kStrided, 0.5f},
      {15, 31, 600, Layout::kRows, Layout::kCols, 0.f},   // several k blocks
      {29, 47, 1000, Layout::kStrided, Layout::kRows, 1.f},
      {200, 300, 8, Layout::kRows, Layout::kRows, 0.f},  // small K
      {7, 16, 16, Layout::kRows, Layout::kRows, 0.f},    // exactly one AVX2 tile row wide
      {14, 32, 9, Layout::kRows, Layout::kRows, 0.f},    // exactly one AVX-512 tile
  };
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    SCOPED_TRACE(isa_name(isa));
    std::mt19937 rng(3);
    for (const Case& t : cases) check(t, rng);
  }
}

TEST(GemmJit, EveryTileHeightAndThreadCountGivesTheSameBits) {
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    SCOPED_TRACE(isa_name(isa));
    std::mt19937 rng(5);
    const int64_t m = 203, n = 150, k = 777;
    const Operand a(m, k, Layout::kRows, rng), b(k, n, Layout::kCols, rng);
    std::vector<float> first;
    const int threads = get_num_threads();
    for (int t : {1, 2, 3})
      for (int mr : gemm_tile_rows_candidates())
        for (int repeat = 0; repeat < 2; ++repeat) {
          set_num_threads(t);
          TileRowsGuard rows(mr);
          std::vector<float> c(size_t(m * n));
          ASSERT_TRUE(jit_gemm(m, n, k, a.ref(), b.ref(), 0.f, c.data(), n));
          if (first.empty()) first = c;
          EXPECT_TRUE(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0)
              << "threads " << t << ", " << mr << " rows";
        }
    set_num_threads(threads);
  }
}

TEST(GemmJit, EveryTileHeightMatchesNaive) {
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    for (int mr = 1; mr <= x86::GemmTileKernel::max_rows(isa, 2); ++mr) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << ", " << mr << " rows");
      TileRowsGuard rows(mr);
      std::mt19937 rng{uint32_t(mr)};
      check({37, 45, 21, Layout::kRows, Layout::kRows, 0.5f}, rng);
      check({37, 45, 21, Layout::kCols, Layout::kStrided, 1.f}, rng);
    }
  }
}

// B's rows by a table (gemm.h RowTable): read in place (A small), packed a
// k block at a time (A past half of any L2), and in segments (several
// images' windows side by side: runs of `segment` columns, `stride` apart),
// against double sums of the rows the table names; beta 0 and 1; the same
// bits on 1 and 2 threads.
TEST(GemmJit, RowTablesInPlacePackedAndInSegments) {
  struct TableCase {
    int64_t m, n, k, segment;
  };
  const TableCase cases[] = {
      {37, 45, 21, 0},    // in place
      {600, 70, 500, 0},  // A 1.2 MB: packed
      {37, 50, 21, 25},   // two segments, a panel across their boundary
      {19, 98, 33, 49},   // 7×7 images
      {8, 9, 5, 3},       // segments narrower than a vector
  };
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    for (const TableCase& t : cases) {
      SCOPED_TRACE(::testing::Message() << isa_name(isa) << " " << t.m << "x" << t.n << "x" << t.k << " segment "
                                        << t.segment);
      std::mt19937 rng(uint32_t(t.m + t.n + t.k));
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      const int64_t segments = t.segment ? (t.n + t.segment - 1) / t.segment : 1;
      const int64_t run = t.segment ? t.segment : t.n;  // columns of one segment's rows
      const int64_t stride = 3 * run + 41;              // between segments: room for every row's offset
      std::vector<float> buf(size_t(segments * stride + 2 * run + cpu::kRowTableSlack + 64));
      for (float& v : buf) v = u(rng);
      std::vector<int64_t> rows(size_t(t.k));
      std::uniform_int_distribution<int64_t> offset(0, 2 * run + 40);
      for (int64_t& r : rows) r = offset(rng);
      cpu::RowTable table{buf.data(), rows.data()};
      table.segment = t.segment;
      table.segment_stride = t.segment ? stride : 0;
      auto b_at = [&](int64_t p, int64_t j) {
        const int64_t seg = t.segment ? j / t.segment : 0, col = t.segment ? j % t.segment : j;
        return buf[size_t(seg * stride + rows[size_t(p)] + col)];
      };
      const Operand a(t.m, t.k, Layout::kRows, rng);
      std::vector<float> first;
      const int threads = get_num_threads();
      for (int th : {1, 2})
        for (float beta : {0.f, 1.f}) {
          set_num_threads(th);
          std::vector<float> c(size_t(t.m * t.n), 0.25f);
          ASSERT_TRUE(cpu::gemm_row_table_b(t.m, t.n, t.k, a.ref(), table, beta, c.data(), t.n));
          int64_t bad = 0;
          for (int64_t i = 0; i < t.m; ++i)
            for (int64_t j = 0; j < t.n; ++j) {
              double want = beta * 0.25, scale = 0;
              for (int64_t p = 0; p < t.k; ++p) {
                want += double(a.at(i, p)) * double(b_at(p, j));
                scale += std::abs(double(a.at(i, p)) * double(b_at(p, j)));
              }
              const double got = c[size_t(i * t.n + j)];
              if (!(std::abs(got - want) <= 1e-5 * (scale + 1)) && bad++ < 3)
                ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << want;
            }
          EXPECT_EQ(bad, 0);
          if (beta != 0.f) continue;
          if (first.empty()) first = c;
          EXPECT_TRUE(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0) << th << " threads";
        }
      set_num_threads(threads);
    }
  }
}

TEST(GemmJit, TuningPicksOneTileHeightPerShapeClassAndPersistsIt) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("nnvm-gemm-tune-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    SCOPED_TRACE(isa_name(isa));
    const std::vector<int> tiles = gemm_tile_rows_candidates();
    set_gemm_tuning_dir(dir.string());
    std::mt19937 rng(9);
    const int64_t m = 256, n = 256, k = 128;  // 2^23 multiply-adds: tuned
    const Operand a(m, k, Layout::kRows, rng), b(k, n, Layout::kRows, rng);
    std::vector<float> c(size_t(m * n)), first;
    const std::string key = std::string(isa_name(isa)) + " m8 n8 k7 a:rows b:rows t" +
                            std::to_string(parallel_threads());
    for (size_t call = 0; call < 2 * tiles.size() + 1; ++call) {
      ASSERT_TRUE(jit_gemm(m, n, k, a.ref(), b.ref(), 0.f, c.data(), n));
      if (first.empty()) first = c;
      EXPECT_TRUE(std::memcmp(c.data(), first.data(), c.size() * sizeof(float)) == 0) << "call " << call;
    }
    const int chosen = gemm_tuned_rows(key);
    if (tiles.size() == 1) {
      EXPECT_EQ(chosen, 0) << "one candidate: nothing to tune";
    }
    if (tiles.size() > 1) {
      EXPECT_NE(std::find(tiles.begin(), tiles.end(), chosen), tiles.end()) << key << " -> " << chosen;
      // The choice is in the file, and a fresh process (here: forgotten tuning) reads it back.
      std::ifstream in(gemm_tuning_file());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(text.find(key + "\t" + std::to_string(chosen)), std::string::npos) << text;
      reset_gemm_tuning();
      ASSERT_TRUE(jit_gemm(m, n, k, a.ref(), b.ref(), 0.f, c.data(), n));
      EXPECT_EQ(gemm_tuned_rows(key), chosen);
    }
    set_gemm_tuning_dir("");
  }
  std::filesystem::remove_all(dir);
}

TEST(GemmJit, LeavesTheFewRowProductsAndThePortableIsaToTheCppKernels) {
  std::vector<float> a(3 * 8, 1.f), b(8 * 40, 1.f), c(3 * 40);
  EXPECT_FALSE(jit_gemm(3, 40, 8, {a.data(), 8, 1}, {b.data(), 40, 1}, 0.f, c.data(), 40));
  IsaGuard portable(Isa::kPortable);
  EXPECT_FALSE(jit_gemm(30, 40, 8, {a.data(), 8, 1}, {b.data(), 40, 1}, 0.f, c.data(), 40));
}

TEST(GemmJit, TileHeightsOutsideTheRegistersAreRefused) {
  for (Isa isa : jit_isas()) {
    IsaGuard scope(isa);
    const int most = x86::GemmTileKernel::max_rows(isa, 2);
    testing::expect_error([most] { set_gemm_tile_rows(most + 1); },
                          {"set_gemm_tile_rows", std::to_string(most + 1), "at most " + std::to_string(most)});
  }
}

}  // namespace
}  // namespace nnvm::jit
