// ONNX's backend node tests through `nnvm run` (docs/MODELS.md).
//
//   onnx_conformance NNVM_BINARY TESTDATA_DIR EXPECTED_PASSES WORK_DIR [--update] [--filter SUBSTR] [--jobs N]
//
// Runs every test_data_set of every test under TESTDATA_DIR (one directory
// per test: model.onnx, test_data_set_*/input_*.pb and output_*.pb) as
// `nnvm run`, compares each output with ONNX's tolerances (rtol 1e-3,
// atol 1e-7; NaN equals NaN; integers and bools exactly), prints one line
// per test and the pass count per op, and exits 1 when a test listed in
// EXPECTED_PASSES fails. --update rewrites EXPECTED_PASSES with the tests
// that passed, and known_failures.txt beside it with each failure's reason.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nnvm/model.h"
#include "nnvm/nnvm.h"

namespace fs = std::filesystem;

namespace {

struct Test {
  std::string name;
  fs::path dir;
  std::string op;  // the op type of the model's first node
  bool passed = false;
  std::string reason;
};

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && e.path().extension() == ".pb")
      files.emplace_back(std::atoi(name.c_str() + prefix.size()), e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : files) out.push_back(p);
  return out;
}

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// Runs `nnvm run` in a child with a time limit; returns its exit status, or -signal.
int run_child(const std::string& binary, const std::vector<std::string>& args, const fs::path& err_file) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string err = err_file.string();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    alarm(120);  // a test that hangs fails instead of stopping the run
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

// "" when `got` matches `want` within ONNX's tolerances; otherwise why not.
std::string compare(const nnvm::Tensor& got, const nnvm::Tensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(nnvm::dtype_name(got.dtype())) + ", expected " +
           std::string(nnvm::dtype_name(want.dtype()));
  if (got.sizes() != want.sizes())
    return "shape " + nnvm::shape_str(got.sizes()) + ", expected " + nnvm::shape_str(want.sizes());
  nnvm::Tensor g = got.to(nnvm::kFloat64).contiguous(), w = want.to(nnvm::kFloat64).contiguous();
  const double* gp = g.data_ptr<double>();
  const double* wp = w.data_ptr<double>();
  bool exact = !nnvm::is_floating(want.dtype());
  for (int64_t i = 0; i < g.numel(); ++i) {
    double a = gp[i], b = wp[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (!exact && std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)) continue;
    return "value " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(b);
  }
  return "";
}

void run_test(const std::string& binary, const fs::path& work, Test& t) {
  fs::path model = t.dir / "model.onnx";
  int set = 0;
  for (const auto& e : fs::directory_iterator(t.dir)) {
    if (!e.is_directory() || e.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    fs::path out = work / t.name / e.path().filename();
    fs::remove_all(out);
    std::vector<std::string> args = {"run", model.string(), "--inputs"};
    for (const auto& in : sorted_files(e.path(), "input_")) args.push_back(in.string());
    args.push_back("--out-dir");
    args.push_back(out.string());
    fs::create_directories(out);
    int status = run_child(binary, args, out / "stderr.txt");
    if (status != 0) {
      t.reason = status < 0 ? "killed by signal " + std::to_string(-status) : first_line(out / "stderr.txt");
      return;
    }
    std::vector<fs::path> want = sorted_files(e.path(), "output_");
    for (size_t i = 0; i < want.size(); ++i) {
      fs::path got = out / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(got)) {
        t.reason = "no output " + std::to_string(i);
        return;
      }
      std::string why;
      try {
        why = compare(nnvm::load_onnx_tensor(got.string()), nnvm::load_onnx_tensor(want[i].string()));
      } catch (const std::exception& ex) {
        why = ex.what();
      }
      if (!why.empty()) {
        t.reason = "output " + std::to_string(i) + ": " + why;
        return;
      }
    }
    ++set;
  }
  t.passed = set > 0;
  if (set == 0) t.reason = "no test data";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: onnx_conformance NNVM_BINARY TESTDATA_DIR EXPECTED_PASSES WORK_DIR [--update] "
                 "[--filter SUBSTR] [--jobs N]\n";
    return 2;
  }
  std::string binary = fs::absolute(argv[1]).string();
  fs::path data = argv[2], expected_file = argv[3], work = argv[4];
  bool update = false;
  std::string filter;
  int jobs = int(std::max(1u, std::min(4u, std::thread::hardware_concurrency())));
  for (int i = 5; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--update") update = true;
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--jobs" && i + 1 < argc) jobs = std::max(1, std::atoi(argv[++i]));
  }
  if (!fs::is_directory(data)) {
    std::cerr << "onnx_conformance: no test data at " << data << " (Debian package libonnx-testdata)\n";
    return 77;  // skipped
  }
  std::vector<Test> tests;
  for (const auto& e : fs::directory_iterator(data)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    std::string name = e.path().filename().string();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    Test t{name, e.path(), "?", false, ""};
    try {
      nnvm::Graph g = nnvm::read_graph((e.path() / "model.onnx").string());
      if (!g.nodes.empty()) t.op = g.nodes[0].op_type;
    } catch (const std::exception&) {
    }
    tests.push_back(std::move(t));
  }
  std::sort(tests.begin(), tests.end(), [](const Test& a, const Test& b) { return a.name < b.name; });
  fs::create_directories(work);

  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int j = 0; j < jobs; ++j)
    pool.emplace_back([&] {
      for (size_t i = next++; i < tests.size(); i = next++) run_test(binary, work, tests[i]);
    });
  for (auto& th : pool) th.join();

  std::set<std::string> expected;
  {
    std::ifstream in(expected_file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  std::map<std::string, std::pair<int, int>> per_op;  // passed, total
  int passed = 0, regressions = 0, new_passes = 0;
  for (const Test& t : tests) {
    auto& [p, n] = per_op[t.op];
    ++n;
    if (t.passed) {
      ++p;
      ++passed;
      if (!expected.count(t.name)) ++new_passes;
      std::cout << "PASS " << t.name << "\n";
    } else {
      bool regression = expected.count(t.name) != 0;
      regressions += regression;
      std::cout << (regression ? "REGRESSION " : "FAIL ") << t.name << ": " << t.reason << "\n";
    }
  }
  std::cout << "\npasses per op:\n";
  for (const auto& [op, pn] : per_op) std::cout << "  " << op << " " << pn.first << "/" << pn.second << "\n";
  std::cout << "\n" << passed << " of " << tests.size() << " tests pass; " << regressions
            << " expected passes fail; " << new_passes << " pass that the list does not expect\n";
  if (update) {
    std::ofstream out(expected_file, std::ios::trunc);
    out << "# ONNX node tests (libonnx-testdata 1.12) that nnvm passes; tests/onnx/conformance.cpp fails on\n"
           "# any listed test that stops passing. Regenerate with --update (docs/MODELS.md).\n";
    for (const Test& t : tests)
      if (t.passed) out << t.name << "\n";
    // Beside it, every test that fails, with its reason: what is left to do.
    fs::path failures = expected_file.parent_path() / "known_failures.txt";
    std::ofstream why(failures, std::ios::trunc);
    why << "# ONNX node tests nnvm does not pass, with the reason nnvm run gives; written by --update.\n";
    for (const Test& t : tests)
      if (!t.passed) {
        std::string reason = t.reason;
        for (const std::string& noise : {data.string() + "/" + t.name + "/", std::string("nnvm: ")})
          for (size_t at; (at = reason.find(noise)) != std::string::npos;) reason.erase(at, noise.size());
        why << t.name << ": " << reason << "\n";
      }
  }
  return regressions ? 1 : 0;
}
