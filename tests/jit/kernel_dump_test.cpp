// jit/kernel_dump.h: NNVM_DUMP writes each kernel's machine code and LoopIR;
// the perf map names each kernel's code range.
#include "nnvm/jit/kernel_dump.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "nnvm/jit/pointwise_jit.h"
#include "nnvm/jit/x86/pointwise_kernel.h"
#include "nnvm/trace/executor.h"
#include "isa_scope.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LoopIR tanh_of_sum() {  // out0 = tanh(in0 + s0)
  LoopIR ir;
  ir.inputs = 1;
  ir.args = {{0, 0}};
  ir.exprs = {Expr{Prim::kLoad, -1, -1, -1, 0}, Expr{Prim::kArg, -1, -1, -1, 0}, Expr{Prim::kAdd, 0, 1},
              Expr{Prim::kTanh, 2}};
  ir.stores = {3};
  return ir;
}

class KernelDump : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nnvm-kernel-dump-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    set_kernel_dump_dir(dir_.string());
  }
  void TearDown() override {
    set_kernel_dump_dir("");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(KernelDump, WritesTheMachineCodeAndTheLoopIR) {
  const LoopIR ir = tanh_of_sum();
  for (Isa isa : jit_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const std::string key = std::string("kernel-dump-test-") + isa_name(isa);
    const CompiledPointwise compiled(ir, "cc", isa, key);
    const fs::path stem = dir_ / kernel_file_stem(key, isa);
    ASSERT_TRUE(fs::exists(stem.string() + ".bin"));
    EXPECT_EQ(fs::file_size(stem.string() + ".bin"), compiled.code_bytes());
    EXPECT_NE(compiled.describe().find(std::to_string(compiled.code_bytes()) + " bytes"), std::string::npos);
    const std::string code = read_all(stem.string() + ".bin");
    EXPECT_EQ(std::memcmp(code.data(), compiled.kernel().entry(), code.size()), 0) << "the bytes that run";
    const std::string text = read_all(stem.string() + ".loopir.txt");
    EXPECT_NE(text.find(key), std::string::npos) << text;
    EXPECT_NE(text.find(ir.to_string()), std::string::npos) << text;
    EXPECT_NE(text.find("accesses cc"), std::string::npos) << text;
  }
}

TEST_F(KernelDump, APlanDumpsTheKernelsItCompiles) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  IsaGuard isa(jit_isas()[0]);  // NNVM_ISA=portable compiles nothing
  const Tensor x = testing::random({3, 50}, kFloat32, 1);
  EagerGuard eager;
  trace::Trace t;
  const trace::ValueId xv = t.add_input(x);
  // an op order no other test uses, so this plan compiles its own kernel
  t.mark_output(t.add_node1(find_op("sigmoid"), {t.add_node1(find_op("abs"), {t.add_node1(find_op("log"), {xv})})}));
  const trace::FusedPlan plan(t);
  plan.run({x}, {});
  int bins = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    if (entry.path().extension() != ".bin") continue;
    ++bins;
    EXPECT_GT(entry.file_size(), 0u);
    EXPECT_TRUE(fs::exists(fs::path(entry.path()).replace_extension(".loopir.txt"))) << entry.path();
  }
  EXPECT_EQ(bins, 1);
}

TEST(PerfMap, EachKernelGetsALineNamingItsCodeRange) {
  if (jit_isas().empty()) GTEST_SKIP() << "no JIT ISA on this CPU";
  const bool existed = fs::exists(perf_map_path());
  set_perf_map(true);
  const LoopIR ir = tanh_of_sum();
  std::vector<std::unique_ptr<CompiledPointwise>> kernels;
  for (Isa isa : jit_isas())
    kernels.push_back(std::make_unique<CompiledPointwise>(ir, "cc", isa, std::string("perf-map-test-") + isa_name(isa)));
  set_perf_map(false);
  std::ifstream map(perf_map_path());
  const std::regex line_format("([0-9a-f]+) ([0-9a-f]+) nnvm_jit_pointwise_([0-9a-f]{16})_(avx512|avx2)");
  std::string line;
  size_t found = 0;
  while (std::getline(map, line)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_format)) << line;
    for (const auto& k : kernels)
      if (std::stoull(m[1], nullptr, 16) == reinterpret_cast<uintptr_t>(k->kernel().entry())) {
        ++found;
        EXPECT_EQ(std::stoull(m[2], nullptr, 16), k->code_bytes());
      }
  }
  EXPECT_EQ(found, kernels.size());
  if (!existed) fs::remove(perf_map_path());
}

}  // namespace
}  // namespace nnvm::jit
