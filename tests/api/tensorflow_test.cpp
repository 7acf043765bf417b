// TensorFlow frozen graphs (.pb): Keras models frozen by
// tests/data/tensorflow/make_fixtures.py run as TensorFlow ran them, through
// the API and through `nnvm run`; damaged files and graphs are errors naming
// the file and the node, never crashes.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"

namespace nnvm {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(NNVM_TEST_DATA_DIR) / "tensorflow";

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class F> void expect_error(F f, const std::vector<std::string>& pieces) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << pieces[0] << "'";
  } catch (const Error& e) {
    for (const std::string& p : pieces) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

std::vector<Tensor> tensors(const fs::path& dir, const char* prefix) {
  std::vector<Tensor> out;
  for (int i = 0; fs::exists(dir / (prefix + std::to_string(i) + ".pb")); ++i)
    out.push_back(load_onnx_tensor((dir / (prefix + std::to_string(i) + ".pb")).string()));
  return out;
}

void expect_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
    EXPECT_TRUE(allclose(got[i], want[i], 1e-4, 1e-6)) << "output " << i << "\n" << got[i] << "\n" << want[i];
  }
}

// Each fixture's outputs are TensorFlow's; twice, so the second call runs the cached trace.
void expect_fixture_runs(const std::string& name, const std::vector<std::string>& outputs, size_t parameters) {
  fs::path dir = kFixtures / name;
  Model m = load_model((dir / "model.pb").string());
  ASSERT_EQ(m.outputs().size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) EXPECT_EQ(m.outputs()[i].name, outputs[i]);
  EXPECT_EQ(m.parameters().size(), parameters);
  std::vector<Tensor> inputs = tensors(dir, "input_"), want = tensors(dir, "output_");
  for (int call = 0; call < 2; ++call) expect_outputs(m(inputs), want);
}

TEST(Tensorflow, KerasMlpRunsAsTensorflowRanIt) {
  expect_fixture_runs("mlp", {"Identity"}, 4);
  // the batch is symbolic: another batch size runs too
  Model m = load_model((kFixtures / "mlp/model.pb").string());
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m({randn({7, 8})})[0].sizes(), (std::vector<int64_t>{7, 4}));
}

TEST(Tensorflow, KerasCnnRunsAsTensorflowRanIt) {
  // conv, bias and filter constants; batch norm's four and its epsilon; the two convs'; the dense layer's
  expect_fixture_runs("cnn", {"Identity"}, 2 + 5 + 2 + 2 + 2);
}

TEST(Tensorflow, RawOpsRunAsTensorflowRanThem) {
  expect_fixture_runs("ops", {"Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"}, 11);
}

TEST(Tensorflow, ShapeIndexAndElementwiseOpsRunAsTensorflowRanThem) {
  // the floating constants (0.5, 1.0, -1.0, ...) are parameters too
  expect_fixture_runs("tensor_ops", {"Identity", "Identity_1", "Identity_2", "Identity_3"}, 6);
}

TEST(Tensorflow, TheOutputsCanBeNamed) {
  std::string bytes = read_bytes(kFixtures / "mlp/model.pb");
  Model m(read_tensorflow(bytes, "mlp", {"sequential_1/dense_1/Relu", "sequential_1/dense_1_2/BiasAdd:0"}));
  std::vector<Tensor> out = m(tensors(kFixtures / "mlp", "input_"));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{3, 16}));
  EXPECT_TRUE(allclose(out[1].softmax(1), tensors(kFixtures / "mlp", "output_")[0], 1e-4, 1e-6));
  expect_error([&] { read_tensorflow(bytes, "mlp", {"nowhere:0"}); },
               {"load_model: 'mlp': the requested output 'nowhere:0' is no node's output"});
}

TEST(Tensorflow, AnUnsupportedOpIsReportedByName) {
  fs::path file = kFixtures / "unsupported/model.pb";
  EXPECT_EQ(unsupported_ops(read_graph(file.string())), std::vector<std::string>{"tf::Lgamma"});
  expect_error([&] { load_model(file.string()); }, {"tf::Lgamma", "'Lgamma'"});
}

// Every truncation and every byte flipped loads or is an nnvm::Error; the
// MLP's damaged graphs that load also run (the others' would compile a trace
// each), and the CNN's bytes are flipped only at every 7th (Keras's layers
// again, 12 KB).
TEST(Tensorflow, DamagedFilesAreErrorsNeverCrashes) {
  for (const char* name : {"mlp", "cnn", "ops"}) {
    std::string bytes = read_bytes(kFixtures / name / "model.pb");
    std::vector<Tensor> inputs = tensors(kFixtures / name, "input_");
    int errors = 0;
    for (size_t n = 0; n < bytes.size(); ++n) {
      try {
        Model m(read_tensorflow(bytes.substr(0, n), "truncated"));
      } catch (const Error&) {
        ++errors;
      }
    }
    EXPECT_GT(errors, 0) << name;
    for (size_t i = 0; i < bytes.size(); i += std::string(name) == "cnn" ? 7 : 1) {
      std::string damaged = bytes;
      damaged[i] = char(damaged[i] ^ 0x5a);
      try {
        Model m(read_tensorflow(damaged, "damaged"));
        if (std::string(name) == "mlp") m(inputs);
      } catch (const Error&) {
      }
    }
  }
  expect_error([] { read_tensorflow("not a graph at all", "junk"); },
               {"load_model: 'junk' is not a valid TensorFlow GraphDef (malformed or truncated)"});
  expect_error([] { read_tensorflow("", "empty"); }, {"'empty' is a TensorFlow GraphDef without nodes"});
  expect_error([] { load_model("/nonexistent/model.pb"); }, {"cannot open '/nonexistent/model.pb'"});
}

// ---- graphs written by hand, in protobuf's wire format ----

std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += char(v | 0x80);
  return s + char(v);
}
std::string bytes_field(int number, const std::string& value) {
  return varint(uint64_t(number) << 3 | 2) + varint(value.size()) + value;
}
std::string int_field(int number, uint64_t value) { return varint(uint64_t(number) << 3) + varint(value); }

// GraphDef.node = 1; NodeDef: name 1, op 2, input 3, attr 5 (map entry: key 1, value 2)
std::string node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                 const std::vector<std::pair<std::string, std::string>>& attrs = {}) {
  std::string n = bytes_field(1, name) + bytes_field(2, op);
  for (const std::string& in : inputs) n += bytes_field(3, in);
  for (const auto& [key, value] : attrs) n += bytes_field(5, bytes_field(1, key) + bytes_field(2, value));
  return bytes_field(1, n);
}
// AttrValue: type 6, shape 7, tensor 8, b 5; TensorShapeProto.dim 2 (size 1)
std::string type_attr(int dtype) { return int_field(6, uint64_t(dtype)); }
std::string shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += bytes_field(2, int_field(1, uint64_t(d)));
  return s;
}
// TensorProto: dtype 1, tensor_shape 2, float_val 5 (packed)
std::string float_const(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  std::string packed(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return bytes_field(8, int_field(1, 1) + bytes_field(2, shape(dims)) + bytes_field(5, packed));
}
std::string placeholder(const std::string& name, const std::vector<int64_t>& dims) {
  return node(name, "Placeholder", {}, {{"dtype", type_attr(1)}, {"shape", bytes_field(7, shape(dims))}});
}

TEST(Tensorflow, NodesRunInDependencyOrderWhateverTheFileOrder) {
  // the consumer first; a splat constant (one value for six) and a control input
  std::string g = node("out", "AddV2", {"x", "c:0", "^init"}) + node("init", "NoOp", {}) +
                  node("c", "Const", {}, {{"dtype", type_attr(1)}, {"value", float_const({2, 3}, {1.5f})}}) +
                  placeholder("x", {-1, 3});
  Model m(read_tensorflow(g, "handmade"));
  EXPECT_EQ(m.inputs()[0].shape->at(0).symbol, "x_d0");
  Tensor x = randn({2, 3});
  EXPECT_TRUE(allclose(m({x})[0], x + 1.5));
}

TEST(Tensorflow, BadGraphsAreErrorsNamingTheNode) {
  expect_error([] { read_tensorflow(node("a", "Identity", {"b"}) + node("b", "Identity", {"a"}), "g"); },
               {"load_model: 'g': Identity node 'a': is on a cycle of the graph"});
  expect_error([] { read_tensorflow(node("a", "Relu", {"nowhere:0"}), "g"); },
               {"Relu node 'a': reads 'nowhere:0', which no node of the graph defines"});
  expect_error([] { read_tensorflow(placeholder("x", {1}) + node("a", "Relu", {"x:2147483647"}), "g"); },
               {"Relu node 'a': input 'x:2147483647' names no output"});
  expect_error([] { read_tensorflow(placeholder("a", {1}) + placeholder("a", {1}), "g"); },
               {"two nodes are named 'a'"});
  expect_error(
      [] {
        std::string big = bytes_field(8, int_field(1, 1) + bytes_field(2, shape({1 << 30})) + bytes_field(5, "abcd"));
        read_tensorflow(node("c", "Const", {}, {{"value", big}}), "g");
      },
      {"Const node 'c': its value lists 1 values for shape [1073741824]"});
  expect_error([] { read_tensorflow(node("s", "Const", {}, {{"value", bytes_field(8, int_field(1, 7))}}), "g"); },
               {"Const node 's': has data type DT_STRING, which nnvm does not have"});
  expect_error([] { read_tensorflow(node("x", "Placeholder", {}, {{"dtype", float_const({}, {})}}), "g"); },
               {"Placeholder node 'x': attribute 'dtype' must be type, got tensor"});
  // found by fuzz/fuzz_tensorflow_replay: a ConcatV2 without inputs read input -1
  expect_error([] { read_tensorflow(node("c", "ConcatV2", {}), "g"); },
               {"ConcatV2 node 'c': needs the axis and at least one tensor to join, has 0 inputs"});
  expect_error([] { read_tensorflow(node("c", "Concat", {}), "g"); },
               {"Concat node 'c': needs the axis and at least one tensor to join, has 0 inputs"});
  // an output inference does not make, read by another node
  std::string bn = placeholder("x", {1, 2, 2, 1});
  for (const char* p : {"s", "o", "m", "v"})
    bn += node(p, "Const", {}, {{"value", float_const({1}, {1.0f})}});
  bn += node("bn", "FusedBatchNormV3", {"x", "s", "o", "m", "v"}, {{"is_training", int_field(5, 0)}}) +
        node("y", "Identity", {"bn:1"});
  expect_error([&] { read_tensorflow(bn, "g"); },
               {"FusedBatchNormV3 node 'bn': its output 1 is read by another node"});
}

#ifdef NNVM_CLI
TEST(Tensorflow, NnvmRunWritesTensorflowsOutputs) {
  fs::path dir = kFixtures / "ops", out = fs::temp_directory_path() / "nnvm_tensorflow_test_run";
  fs::remove_all(out);
  std::string cmd = std::string(NNVM_CLI) + " run " + (dir / "model.pb").string() + " --inputs " +
                    (dir / "input_0.pb").string() + " " + (dir / "input_1.pb").string() + " --out-dir " + out.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  expect_outputs(tensors(out, "output_"), tensors(dir, "output_"));
  fs::remove_all(out);
}
#endif

}  // namespace
}  // namespace nnvm
