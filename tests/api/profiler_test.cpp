// nnvm::profiler::Session (nnvm/profiler.h): what a session records, its
// Chrome trace JSON against the trace event format, the summary table, and
// that nothing is recorded outside a session.
#include "nnvm/profiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"
#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

using profiler::Event;
using profiler::Session;

// Runs a small traced step `steps` times: a product and an elementwise tail,
// new to the trace cache (no other test uses these sizes), so it misses,
// compiles once hot, and then hits.
void run_steps(int steps, int64_t rows = 37) {
  const Mode previous = mode();
  set_mode(Mode::Traced);
  const Tensor w = testing::random({19, 23}, kFloat32, 3);
  const Tensor x = testing::random({rows, 19}, kFloat32, 4);
  for (int s = 0; s < steps; ++s) {
    const Tensor y = (matmul(x, w) * 0.5 + 1.0).relu().sum();
    (void)y.item<float>();
  }
  set_mode(previous);
}

std::map<std::string, int> count_by_category(const std::vector<Event>& events) {
  std::map<std::string, int> n;
  for (const Event& e : events) ++n[e.category];
  return n;
}

TEST(Profiler, RecordsOpsFlushesCacheCompileStagesKernelsAndMemory) {
  Session session;
  run_steps(6);
  session.stop();
  const std::vector<Event> events = session.events();
  const auto n = count_by_category(events);
  EXPECT_GE(n.at("op"), 6 * 4);
  EXPECT_GE(n.at("flush"), 6);
  EXPECT_GE(n.at("cache"), 6);
  EXPECT_GE(n.at("kernel"), 1);
  EXPECT_GE(n.at("memory"), 1);
  std::set<std::string> stages;
  bool miss_with_reason = false, hit = false, kernel_with_unit = false, product_flops = false;
  for (const Event& e : events) {
    EXPECT_GT(e.thread, 0u);
    EXPECT_GE(e.start_ns, 0);
    EXPECT_GE(e.duration_ns, 0);
    if (e.category == std::string("compile") || e.category == std::string("stage")) stages.insert(e.name);
    if (e.name == "cache miss") miss_with_reason |= e.args.find("\"reason\"") != std::string::npos;
    if (e.name == "cache hit") hit = true;
    if (e.category == std::string("kernel")) {
      kernel_with_unit |= e.args.find("\"unit\"") != std::string::npos && e.bytes > 0;
      // The product's flops: 2 * 37 * 23 * 19.
      if (e.name.find("matmul") != std::string::npos) product_flops |= e.flops == 2.0 * 37 * 23 * 19;
    }
  }
  EXPECT_TRUE(miss_with_reason);
  EXPECT_TRUE(hit);
  EXPECT_TRUE(kernel_with_unit);
  EXPECT_TRUE(product_flops);
  for (const char* stage : {"compile", "passes", "fuse", "lower", "schedule", "plan_memory", "plan"})
    EXPECT_TRUE(stages.count(stage)) << stage;
}

TEST(Profiler, RecordsNothingOutsideASession) {
  Session session;
  run_steps(1);
  session.stop();
  const size_t recorded = session.events().size();
  ASSERT_GT(recorded, 0u);
  run_steps(3);
  EXPECT_EQ(session.events().size(), recorded);
  EXPECT_FALSE(profiling::on());
}

TEST(Profiler, NestedSessionsEachSeeTheirOwnSpan) {
  Session outer;
  run_steps(1, 41);
  Session inner;
  run_steps(1, 41);
  inner.stop();
  run_steps(1, 41);
  outer.stop();
  EXPECT_GT(inner.events().size(), 0u);
  EXPECT_GT(outer.events().size(), inner.events().size());
}

TEST(Profiler, EagerOpsAreTimedWithTheirBytes) {
  const Mode previous = mode();
  set_mode(Mode::Eager);
  const Tensor x = testing::random({64, 32}, kFloat32, 5);
  Session session;
  const Tensor y = x.exp();
  session.stop();
  set_mode(previous);
  bool found = false;
  for (const Event& e : session.events())
    if (e.category == std::string("op") && e.name == "exp") {
      found = true;
      EXPECT_NE(e.args.find("\"ran\""), std::string::npos);
      EXPECT_EQ(e.bytes, 2.0 * 64 * 32 * 4);
    }
  EXPECT_TRUE(found);
}

TEST(Profiler, ChromeTraceFollowsTheTraceEventFormat) {
  Session session;
  run_steps(4);
  session.stop();
  const std::string path = ::testing::TempDir() + "/nnvm_profile.json";
  session.export_chrome_trace(path);
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  std::remove(path.c_str());
  ASSERT_TRUE(doc.is_object());
  ASSERT_TRUE(doc.at("traceEvents").is_array());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ms");
  std::set<int64_t> named_threads, threads;
  std::map<std::string, int> phases;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    ASSERT_TRUE(e.at("name").is_string());
    ASSERT_TRUE(e.at("pid").is_number_integer());
    ASSERT_TRUE(e.at("tid").is_number_integer());
    ASSERT_TRUE(e.at("args").is_object());
    const std::string ph = e.at("ph");
    ++phases[ph];
    if (ph == "M") {
      if (e.at("name") == "thread_name") named_threads.insert(e.at("tid").get<int64_t>());
      continue;
    }
    threads.insert(e.at("tid").get<int64_t>());
    ASSERT_TRUE(e.at("cat").is_string());
    ASSERT_TRUE(e.at("ts").is_number());
    EXPECT_GE(e.at("ts").get<double>(), 0);
    if (ph == "X") {
      ASSERT_TRUE(e.at("dur").is_number());
      EXPECT_GE(e.at("dur").get<double>(), 0);
    } else if (ph == "i") {
      EXPECT_EQ(e.at("s"), "t");
    } else if (ph == "C") {
      for (const auto& [key, value] : e.at("args").items()) EXPECT_TRUE(value.is_number()) << key;
    } else {
      ADD_FAILURE() << "phase " << ph;
    }
    if (e.at("cat") == "kernel") {
      EXPECT_TRUE(e.at("args").at("unit").is_string());
      EXPECT_GT(e.at("args").at("bytes").get<double>(), 0);
    }
  }
  EXPECT_GT(phases["X"], 0);
  EXPECT_GT(phases["i"], 0);
  EXPECT_GT(phases["C"], 0);
  EXPECT_EQ(threads, named_threads);
}

TEST(Profiler, KeyAveragesSumEachNameAndTheTableListsTheTopRows) {
  Session session;
  run_steps(5);
  session.stop();
  const profiler::KeyAverages rows = session.key_averages();
  ASSERT_FALSE(rows.empty());
  std::map<std::string, double> share;
  for (size_t i = 0; i < rows.size(); ++i) {
    share[rows[i].category] += rows[i].share;
    if (i > 0) {
      EXPECT_LE(rows[i].total_ms, rows[i - 1].total_ms);
    }
    EXPECT_GT(rows[i].count, 0);
  }
  for (const auto& [category, total] : share) EXPECT_NEAR(total, 1.0, 1e-9) << category;
  // The flushes: one row, a call per step at least.
  const auto flush = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.category == "flush"; });
  ASSERT_NE(flush, rows.end());
  EXPECT_GE(flush->count, 5);
  const std::string table = rows.table(3);
  std::istringstream lines(table);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("Name", 0), 0u);
  EXPECT_NE(header.find("GFLOP/s"), std::string::npos);
  EXPECT_NE(table.find(rows[0].name.substr(0, 20)), std::string::npos);
  EXPECT_NE(table.find("more rows"), std::string::npos);
}

TEST(Profiler, AnUnwritablePathIsAnError) {
  Session session;
  session.stop();
  EXPECT_THROW(session.export_chrome_trace("/nonexistent-dir/trace.json"), Error);
}

}  // namespace
}  // namespace nnvm
