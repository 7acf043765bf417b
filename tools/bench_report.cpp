// bench_report: Google Benchmark JSON (nnvm_bench --benchmark_format=json,
// or --benchmark_out=FILE --benchmark_out_format=json) into one self-contained
// HTML page: per benchmark case, a bar per variant (fused, eager, reference
// implementations), each bar's time and its ratio to the eager bar, and the
// host's CPU model. docs/BENCHMARKS.md, "Reports".
//
//   bench_report RESULTS.json [MORE.json ...] -o report.html
//
// A case is a benchmark name with its variant taken out: BM_Sum/fused/rows
// and BM_Sum/eager/rows are the case BM_Sum/rows, variants fused and eager.
// With repetitions, the median aggregate is used (else the mean of the runs).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace {

// The variants nnvm_bench names, and how each is drawn.
enum class Kind { kFused, kEager, kReference };

Kind kind_of(const std::string& variant) {
  if (variant == "fused" || variant == "traced" || variant.rfind("nnvm", 0) == 0 || variant == "jit") return Kind::kFused;
  if (variant == "eager" || variant.rfind("eager_", 0) == 0 || variant == "unfused") return Kind::kEager;
  return Kind::kReference;
}

bool is_variant(const std::string& part) {
  static const char* const known[] = {"fused", "traced", "eager", "unfused", "handwritten", "onednn", "openblas",
                                      "pytorch", "torch", "libtorch", "ort", "onnxruntime", "reference", "jit",
                                      "nnvm", "nnvm_gemm", "nnvm_cpp", "nnvm_int8", "nnvm_f32", "onednn_int8",
                                      "onednn_f32", "nnvm_int8_gemm", "cpp"};
  for (const char* k : known)
    if (part == k) return true;
  return part.rfind("eager_", 0) == 0;
}

const char* colour(Kind k) {
  switch (k) {
    case Kind::kFused: return "#4c78a8";
    case Kind::kEager: return "#f58518";
    case Kind::kReference: return "#54a24b";
  }
  return "#999";
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Seconds into the unit that reads best.
std::string human_time(double ns) {
  if (ns >= 1e9) return format("%.3g s", ns / 1e9);
  if (ns >= 1e6) return format("%.3g ms", ns / 1e6);
  if (ns >= 1e3) return format("%.3g us", ns / 1e3);
  return format("%.3g ns", ns);
}

double to_ns(double value, const std::string& unit) {
  if (unit == "us") return value * 1e3;
  if (unit == "ms") return value * 1e6;
  if (unit == "s") return value * 1e9;
  return value;
}

struct Bar {
  std::string variant;
  Kind kind = Kind::kReference;
  double ns = 0;
  int runs = 0;
  bool median = false;
};

struct Case {
  std::vector<Bar> bars;  // in first-seen order
};

// Google Benchmark writes a counter's NaN or infinity as a bare token (a
// coefficient of variation of a constant counter: "faults/iter": NaN), which
// JSON has no word for: each becomes null.
std::string without_non_finite(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, ": ") == 0) {
      size_t j = i + 2;
      if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
      bool replaced = false;
      for (const char* word : {"NaN", "nan", "Infinity", "inf"}) {
        const size_t n = std::string(word).size();
        if (text.compare(j, n, word) == 0) {
          out += ": null";
          i = j + n;
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
    }
    out += text[i++];
  }
  return out;
}

[[noreturn]] void fail(const std::string& message) {
  std::cerr << "bench_report: " << message << "\n";
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "usage: bench_report RESULTS.json [MORE.json ...] -o report.html\n";
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty() || out.empty()) {
    std::cerr << "usage: bench_report RESULTS.json [MORE.json ...] -o report.html\n";
    return 2;
  }

  std::string cpu = "unknown CPU", date, host;
  std::vector<std::string> order;
  std::map<std::string, Case> cases;
  for (const std::string& path : inputs) {
    std::ifstream file(path);
    if (!file) fail("cannot open '" + path + "'");
    std::stringstream read;
    read << file.rdbuf();
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(without_non_finite(read.str()));
    } catch (const std::exception& e) {
      fail("'" + path + "' is not JSON: " + e.what());
    }
    if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
      fail("'" + path + "' has no \"benchmarks\" array: not Google Benchmark's JSON output");
    const nlohmann::json& context = doc.value("context", nlohmann::json::object());
    cpu = context.value("cpu_model", cpu);
    date = context.value("date", date);
    host = context.value("host_name", host);
    for (const nlohmann::json& b : doc["benchmarks"]) {
      if (!b.is_object() || !b.contains("real_time") || !b["real_time"].is_number()) continue;
      const std::string run_type = b.value("run_type", "iteration");
      const std::string aggregate = b.value("aggregate_name", "");
      if (run_type == "aggregate" && aggregate != "median") continue;
      std::string name = b.value("run_name", b.value("name", ""));
      for (const char* suffix : {"/real_time", "/process_time"})
        if (name.size() > std::string(suffix).size() && name.substr(name.size() - std::string(suffix).size()) == suffix)
          name.resize(name.size() - std::string(suffix).size());
      std::vector<std::string> parts;
      std::stringstream split(name);
      for (std::string p; std::getline(split, p, '/');) parts.push_back(p);
      if (parts.empty()) continue;
      std::string variant = "nnvm", key = parts[0];
      bool found = false;
      for (size_t k = 1; k < parts.size(); ++k) {
        if (!found && is_variant(parts[k])) {
          variant = parts[k];
          found = true;
        } else {
          key += "/" + parts[k];
        }
      }
      if (!cases.count(key)) order.push_back(key);
      Case& c = cases[key];
      auto it = std::find_if(c.bars.begin(), c.bars.end(), [&](const Bar& bar) { return bar.variant == variant; });
      if (it == c.bars.end()) {
        c.bars.push_back(Bar{variant, kind_of(variant), 0, 0, false});
        it = c.bars.end() - 1;
      }
      const double ns = to_ns(b["real_time"].get<double>(), b.value("time_unit", "ns"));
      if (run_type == "aggregate") {  // the median replaces the runs
        it->ns = ns;
        it->median = true;
      } else if (!it->median) {
        it->ns = (it->ns * it->runs + ns) / (it->runs + 1);
        ++it->runs;
      }
    }
  }
  if (order.empty()) fail("no benchmark results in the input");

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nnvm benchmarks</title>\n"
          "<style>body{font-family:sans-serif;margin:20px}h2{font-size:15px;margin:18px 0 4px}"
          "ul{list-style:none;padding:0}li span{display:inline-block;width:12px;height:12px;margin-right:6px}"
          "</style></head>\n<body>\n<h1>nnvm: fused against eager and references</h1>\n";
  html << "<p class=\"host\">CPU: <b>" << escape(cpu) << "</b>" << (host.empty() ? "" : " on " + escape(host))
       << (date.empty() ? "" : ", " + escape(date)) << ". Times are real time (medians where the runs were "
       << "repeated); each bar's ratio is the eager bar's time over its own (above 1: faster than eager).</p>\n";
  html << "<ul><li><span style=\"background:" << colour(Kind::kFused) << "\"></span>nnvm fused / traced</li>"
       << "<li><span style=\"background:" << colour(Kind::kEager) << "\"></span>nnvm eager (unfused)</li>"
       << "<li><span style=\"background:" << colour(Kind::kReference) << "\"></span>reference (handwritten, "
       << "oneDNN, PyTorch, ...)</li></ul>\n";
  for (const std::string& key : order) {
    const Case& c = cases[key];
    double longest = 0, eager = 0;
    for (const Bar& b : c.bars) {
      longest = std::max(longest, b.ns);
      if (b.kind == Kind::kEager && eager == 0) eager = b.ns;
    }
    const double row = 22, label = 150, width = 520, height = row * double(c.bars.size()) + 4;
    html << "<h2>" << escape(key) << "</h2>\n<svg class=\"case\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
         << label + width + 200 << "\" height=\"" << height << "\">\n";
    for (size_t k = 0; k < c.bars.size(); ++k) {
      const Bar& b = c.bars[k];
      const double y = 2 + row * double(k), w = longest > 0 ? std::max(1.0, b.ns / longest * width) : 1;
      std::string ratio;
      if (eager > 0 && b.ns > 0 && b.kind != Kind::kEager) ratio = format("  %.2fx", eager / b.ns);
      html << "<text x=\"" << label - 6 << "\" y=\"" << y + 14 << "\" font-size=\"12\" text-anchor=\"end\">"
           << escape(b.variant) << "</text>"
           << "<rect class=\"bar\" data-variant=\"" << escape(b.variant) << "\" x=\"" << label << "\" y=\"" << y
           << "\" width=\"" << format("%.1f", w) << "\" height=\"" << row - 6 << "\" fill=\"" << colour(b.kind)
           << "\"/>"
           << "<text x=\"" << label + w + 6 << "\" y=\"" << y + 14 << "\" font-size=\"12\">" << human_time(b.ns)
           << escape(ratio) << "</text>\n";
    }
    html << "</svg>\n";
  }
  html << "</body></html>\n";

  std::ofstream file(out, std::ios::binary | std::ios::trunc);
  if (!file) fail("cannot open '" + out + "' for writing");
  file << html.str();
  file.close();
  if (file.fail()) fail("cannot write '" + out + "'");
  std::cout << "bench_report: " << order.size() << " cases into " << out << "\n";
  return 0;
}
