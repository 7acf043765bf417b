// The `nnvm` command line: run, inspect and benchmark model files
// (docs/MODELS.md).
//
//   nnvm run MODEL --inputs IN_0.pb [IN_1.pb ...] --out-dir DIR   (or .npy in, .npy out)
//   nnvm info MODEL
//   nnvm bench MODEL [--batch N] [--threads T] [--iters I] [--json FILE]
//   nnvm replay BUNDLE [--code]      a repro bundle (docs/PROFILING.md) run again
//
// Exit status 0 on success; otherwise one line on stderr naming the problem
// (status 1), or the usage (status 2).
//
// Parsed by hand, not with absl::flags: its flags are process-wide, not a
// subcommand's (`--batch` would be accepted by `run`), it has no option of
// several values (`--inputs A B`), and a flag it rejects ends the process
// with status 1 and its own message, not the usage with status 2.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "nnvm/kernels/cpu/cpu_features.h"
#include "nnvm/nnvm.h"
#include "nnvm/trace/repro.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: nnvm run MODEL --inputs IN_0.pb [IN_1.pb ...] --out-dir DIR\n"
    "       nnvm info MODEL\n"
    "       nnvm bench MODEL [--batch N] [--threads T] [--iters I] [--json FILE]\n"
    "       nnvm replay BUNDLE [--code]\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command, model;
  std::vector<std::string> inputs;
  std::string out_dir;
  int64_t batch = 1;
  int threads = 0;
  int iters = 0;
  std::string json;  // bench: also write the figures as Google Benchmark JSON (tools/bench_report)
  bool code = false;  // replay: print the bundle's code
};

int64_t parse_int(const std::string& flag, const std::string& value) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(value, &used);
    if (used == value.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(flag + " needs a positive integer, got '" + value + "'");
}

Args parse(int argc, char** argv) {
  if (argc < 3) throw UsageError("");
  Args a;
  a.command = argv[1];
  a.model = argv[2];
  for (int i = 3; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--inputs" && a.command == "run") {
      while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) a.inputs.push_back(argv[++i]);
    } else if (flag == "--out-dir" && a.command == "run") {
      a.out_dir = value();
    } else if (flag == "--batch" && a.command == "bench") {
      a.batch = parse_int(flag, value());
    } else if (flag == "--threads" && a.command == "bench") {
      a.threads = int(parse_int(flag, value()));
    } else if (flag == "--iters" && a.command == "bench") {
      a.iters = int(parse_int(flag, value()));
    } else if (flag == "--json" && a.command == "bench") {
      a.json = value();
    } else if (flag == "--code" && a.command == "replay") {
      a.code = true;
    } else {
      throw UsageError("unknown option '" + flag + "' for '" + a.command + "'");
    }
  }
  if (a.command == "run" && a.out_dir.empty()) throw UsageError("run needs --out-dir DIR");
  return a;
}

std::string describe(const nnvm::ValueInfo& v) {
  std::string s = v.name + ": " + (v.dtype ? std::string(nnvm::dtype_name(*v.dtype)) : "?");
  if (v.shape) {
    s += "[";
    for (size_t d = 0; d < v.shape->size(); ++d) {
      const nnvm::Dim& dim = (*v.shape)[d];
      s += (d ? "," : "") + (dim.fixed() ? std::to_string(dim.size) : dim.symbol.empty() ? "?" : dim.symbol);
    }
    s += "]";
  }
  return s;
}

int run(const Args& a) {
  nnvm::Model model = nnvm::load_model(a.model);
  if (a.inputs.size() != model.inputs().size())
    throw nnvm::Error("run: the model takes " + std::to_string(model.inputs().size()) + " inputs, given " +
                      std::to_string(a.inputs.size()));
  // .npy inputs give .npy outputs; otherwise ONNX TensorProto files.
  bool npy = !a.inputs.empty() && std::all_of(a.inputs.begin(), a.inputs.end(), [](const std::string& p) {
    return fs::path(p).extension() == ".npy";
  });
  std::vector<nnvm::Tensor> inputs;
  for (const std::string& path : a.inputs) inputs.push_back(npy ? nnvm::load_npy(path) : nnvm::load_onnx_tensor(path));
  std::vector<nnvm::Tensor> outputs = model(inputs);
  fs::create_directories(a.out_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    fs::path out = fs::path(a.out_dir) / ("output_" + std::to_string(i) + (npy ? ".npy" : ".pb"));
    if (npy) nnvm::save_npy(outputs[i], out.string());
    else nnvm::save_onnx_tensor(outputs[i], out.string(), model.outputs()[i].name);
  }
  return 0;
}

int info(const Args& a) {
  nnvm::Graph graph = nnvm::read_graph(a.model);
  std::vector<nnvm::ValueInfo> inputs;
  for (const nnvm::ValueInfo& in : graph.inputs) {
    bool init = std::any_of(graph.initializers.begin(), graph.initializers.end(),
                            [&](const auto& kv) { return kv.first == in.name; });
    if (!init) inputs.push_back(in);
  }
  std::cout << "model:   " << a.model << "\nopset:   " << graph.opset << "\ninputs:\n";
  for (const auto& v : inputs) std::cout << "  " << describe(v) << "\n";
  std::cout << "outputs:\n";
  for (const auto& v : graph.outputs) std::cout << "  " << describe(v) << "\n";
  int64_t params = 0, bytes = 0;
  for (const auto& [name, t] : graph.initializers) {
    params += t.numel();
    bytes += int64_t(t.nbytes());
  }
  std::cout << "parameters: " << params << " values in " << graph.initializers.size() << " initializers, " << bytes
            << " bytes\nops (" << graph.nodes.size() << " nodes):\n";
  std::map<std::string, int> counts;
  for (const nnvm::Node& n : graph.nodes) ++counts[n.op_type];
  for (const auto& [op, n] : counts) std::cout << "  " << op << " " << n << "\n";
  std::vector<std::string> missing = nnvm::unsupported_ops(graph);
  if (missing.empty()) {
    std::cout << "unsupported ops: none\n";
  } else {
    std::cout << "unsupported ops:";
    for (const auto& op : missing) std::cout << " " << op;
    std::cout << "\n";
  }
  return 0;
}

// An input for `bench`: a symbolic dimension is the batch for the first
// dimension and 1 elsewhere, values random (indices small).
nnvm::Tensor example_input(const nnvm::ValueInfo& v, int64_t batch) {
  std::vector<int64_t> shape;
  if (v.shape)
    for (size_t d = 0; d < v.shape->size(); ++d) {
      const nnvm::Dim& dim = (*v.shape)[d];
      shape.push_back(dim.fixed() ? dim.size : d == 0 ? batch : 1);
    }
  nnvm::DType dtype = v.dtype.value_or(nnvm::kFloat32);
  if (nnvm::is_floating(dtype)) return nnvm::randn(shape).to(dtype);
  if (dtype == nnvm::kBool) return nnvm::randint(0, 2, shape).to(dtype);
  return nnvm::randint(0, 2, shape).to(dtype);
}

double median_ms(const nnvm::Model& model, const std::vector<nnvm::Tensor>& inputs, int iters, const char* label,
                 int& done, int total) {
  auto run_once = [&] {
    std::vector<nnvm::Tensor> outs = model(inputs);
    for (auto& o : outs) (void)o.data_ptr();  // the values, not only the record
  };
  for (int i = 0; i < 3; ++i) run_once();  // warm up: the trace turns hot and compiles
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run_once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ++done;
    int width = 30, filled = int(int64_t(done) * width / total);
    std::fprintf(stderr, "\r%-6s [%s%s] %d/%d", label, std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done, total);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The two medians in Google Benchmark's JSON layout, so tools/bench_report
// draws them beside nnvm_bench's: cases "nnvm_bench_model/{fused,eager}/MODEL/batch:N".
void write_bench_json(const Args& a, double fused_ms, double eager_ms) {
  const std::string model = std::filesystem::path(a.model).filename().string();
  const std::string& cpu = nnvm::cpu::cpu_features().model;
  nlohmann::json doc;
  doc["context"] = {{"cpu_model", cpu.empty() ? "unknown CPU" : cpu},
                    {"num_cpus", nnvm::get_num_threads()},
                    {"executable", "nnvm bench"}};
  for (const auto& [variant, ms] : {std::pair<const char*, double>{"fused", fused_ms}, {"eager", eager_ms}}) {
    const std::string name = std::string("nnvm_bench_model/") + variant + "/" + model + "/batch:" + std::to_string(a.batch);
    doc["benchmarks"].push_back({{"name", name}, {"run_name", name}, {"run_type", "iteration"},
                                 {"iterations", a.iters > 0 ? a.iters : 20}, {"real_time", ms}, {"time_unit", "ms"}});
  }
  std::ofstream file(a.json, std::ios::binary | std::ios::trunc);
  if (!file) throw nnvm::Error("bench: cannot open '" + a.json + "' for writing");
  file << doc.dump(2) << "\n";
  if (!file.flush()) throw nnvm::Error("bench: cannot write '" + a.json + "'");
}

int bench(const Args& a) {
  if (a.threads > 0) nnvm::set_num_threads(a.threads);
  nnvm::Model model = nnvm::load_model(a.model);
  nnvm::manual_seed(0);
  std::vector<nnvm::Tensor> inputs;
  for (const auto& v : model.inputs()) inputs.push_back(example_input(v, a.batch));
  nnvm::NoGradGuard no_grad;
  int iters = a.iters > 0 ? a.iters : 20, done = 0;
  nnvm::set_mode(nnvm::Mode::Traced);
  double fused = median_ms(model, inputs, iters, "fused", done, 2 * iters);
  nnvm::set_mode(nnvm::Mode::Eager);
  double unfused = median_ms(model, inputs, iters, "eager", done, 2 * iters);
  std::fprintf(stderr, "\n");
  std::printf("%s  batch %lld  threads %d  median of %d\n", a.model.c_str(), (long long)a.batch,
              nnvm::get_num_threads(), iters);
  std::printf("  fused (traced):   %9.3f ms\n  unfused (eager):  %9.3f ms\n  speedup:          %9.2fx\n", fused,
              unfused, unfused / fused);
  if (!a.json.empty()) write_bench_json(a, fused, unfused);
  return 0;
}

// A repro bundle: what it holds, then its trace fused and unfused and the
// outputs compared. The work runs in a child process, so a kernel that
// crashed the program that wrote the bundle is reported, not shared.
// Status 0: fused and unfused agree; 1: they differ, a run failed or crashed.
int replay(const Args& a) {
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) throw nnvm::Error("replay: fork failed");
  if (child == 0) {
    int status = 1;
    try {
      const nnvm::trace::ReproBundle b = nnvm::trace::read_repro_bundle(a.model);
      std::printf("bundle:   %s\nkind:     %s\nengine:   %s (this one: %s)\nmessage:  %s\n", a.model.c_str(),
                  b.kind.c_str(), b.engine.c_str(), nnvm::trace::engine_version().c_str(), b.message.c_str());
      if (!b.unit.empty()) std::printf("unit:     %s\n", b.unit.c_str());
      std::printf("trace:\n%s", b.trace.to_string().c_str());
      if (b.inputs.empty()) std::printf("inputs:   drawn from a fixed seed (the bundle keeps their layouts only)\n");
      for (size_t i = 0; i < b.inputs.size(); ++i)
        std::printf("input %zu:  %s%s strides %s\n", i, std::string(nnvm::dtype_name(b.inputs[i].dtype())).c_str(),
                    nnvm::shape_str(b.inputs[i].sizes()).c_str(), nnvm::shape_str(b.inputs[i].strides()).c_str());
      if (a.code) std::printf("code:\n%s\n", b.code.empty() ? "(none)" : b.code.c_str());
      else if (!b.code.empty()) std::printf("code:     %zu bytes of text (--code prints it)\n", b.code.size());
      const nnvm::trace::ReplayReport report = nnvm::trace::replay_bundle(b);
      std::printf("replay:\n%s", report.to_string().c_str());
      status = report.agrees() ? 0 : 1;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      std::fprintf(stderr, "nnvm: %s\n", msg.c_str());
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(status);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    std::printf("the replay died of signal %d (%s): the fused run crashes again\n", WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    if (a.command == "run") return run(a);
    if (a.command == "info") return info(a);
    if (a.command == "bench") return bench(a);
    if (a.command == "replay") return replay(a);
    throw UsageError("unknown command '" + a.command + "'");
  } catch (const UsageError& e) {
    if (*e.what()) std::cerr << "nnvm: " << e.what() << "\n";
    std::cerr << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::cerr << "nnvm: " << msg << "\n";
    return 1;
  }
}
