// load_state_dict (nnvm/pytorch.h): files PyTorch wrote (tests/data/make_pytorch_fixtures.py)
// loaded by value and into a module that reproduces PyTorch's outputs, and
// hand-made archives for every refusal: a pickle that names code, damaged
// zips, tensors that read past their storage, and keys that do not fit.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {

// The model of make_pytorch_fixtures.py, with PyTorch's names.
struct TorchNetImpl : nn::Module {
  TorchNetImpl()
      : features(register_module("features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)),
                                                            nn::BatchNorm2d(4), nn::ReLU(),
                                                            nn::MaxPool2d(nn::MaxPool2dOptions(2))))),
        head(register_module("head", nn::Sequential(nn::Flatten(), nn::Linear(64, 16), nn::ReLU(),
                                                    nn::Linear(16, 3)))) {
    register_buffer("scale64", zeros({2}, kFloat64));
    register_buffer("table16", zeros({2}, kFloat16));
    register_buffer("table_bf16", zeros({2}, kBFloat16));
    register_buffer("steps", zeros({2}, kInt64));
    register_buffer("mask", zeros({3}, kBool));
  }
  Tensor forward(const Tensor& x) { return head->forward(features->forward(x)); }
  nn::Sequential features, head;
};
NNVM_MODULE(TorchNet);

struct TorchNetExtraImpl : TorchNetImpl {  // a buffer the files do not have
  TorchNetExtraImpl() { register_buffer("extra", zeros({1})); }
};

namespace {

using namespace std::string_literals;
using testing::expect_error;
using testing::expect_values;
using testing::values;

const std::string kDir = std::string(NNVM_TEST_DATA_DIR) + "/pytorch/";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A file of `bytes` in the temporary directory, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes)
      : path_((std::filesystem::temp_directory_path() / ("nnvm_pt_" + std::to_string(::getpid()) + ".pt")).string()) {
    std::ofstream(path_, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- hand-made archives ----

std::string le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += char((v >> (8 * i)) & 0xff);
  return s;
}

// A zip of stored entries, as torch.save lays them out (without its alignment padding).
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, central;
  for (const auto& [name, data] : entries) {
    const uint64_t crc = crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size()));
    const std::string sizes = le(crc, 4) + le(data.size(), 4) + le(data.size(), 4) + le(name.size(), 2) + le(0, 2);
    central += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 8) + sizes + le(0, 10) + le(out.size(), 4) + name;
    out += le(0x04034b50, 4) + le(20, 2) + le(0, 4) + le(0, 4) + sizes + name + data;
  }
  const size_t directory = out.size();
  return out + central + le(0x06054b50, 4) + le(0, 4) + le(entries.size(), 2) + le(entries.size(), 2) +
         le(central.size(), 4) + le(directory, 4) + le(0, 2);
}

std::string archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages = {}) {
  std::vector<std::pair<std::string, std::string>> entries{{"archive/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) entries.emplace_back("archive/data/" + key, bytes);
  return zip_of(entries);
}

// Pickle opcodes, protocol 2, as Python's pickler writes them.
// (Appended rather than "X" + le(...): GCC 12 warns falsely about the insert that would be (-Wrestrict).)
std::string str(std::string_view s) { return std::string("X").append(le(s.size(), 4)).append(s); }
std::string global(std::string_view module, std::string_view name) {
  return "c" + std::string(module) + "\n" + std::string(name) + "\n";
}
std::string integer(int64_t v) { return std::string("J").append(le(uint64_t(v), 4)); }
std::string tuple(const std::vector<int64_t>& ints) {
  std::string s = "(";
  for (const int64_t i : ints) s += integer(i);
  return s + "t";
}
// torch._utils._rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, sizes, strides, False,
// OrderedDict())
std::string tensor(std::string_view type, std::string_view key, int64_t numel, int64_t offset,
                   const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") + global("torch", type) + str(key) +
         str("cpu") + integer(numel) + "tQ" + integer(offset) + tuple(sizes) + tuple(strides) + "\x89" +
         global("collections", "OrderedDict") + ")RtR";
}
// {name: value, ...}; each value is a pickled expression.
std::string dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string s = "\x80\x02}(";
  for (const auto& [name, value] : items) s += str(name) + value;
  return s + "u.";
}
std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::string load_error(const std::string& bytes) {
  const TempFile file(bytes);
  try {
    load_state_dict(file.path());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& bytes, std::initializer_list<std::string_view> pieces) {
  const std::string message = load_error(bytes);
  ASSERT_FALSE(message.empty()) << "loaded without an error";
  for (const std::string_view piece : pieces) EXPECT_NE(message.find(piece), std::string::npos) << message;
}

// ---- files PyTorch wrote ----

void expect_same_bits(const Tensor& actual, const Tensor& expected, const std::string& name) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << name;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << name;
  EXPECT_EQ(values(actual), values(expected)) << name;
}

TEST(PytorchLoad, TensorsByValue) {
  for (const std::string file : {"tensors.pt", "tensors_rezipped.pt"}) {
    SCOPED_TRACE(file);
    const auto t = load_state_dict(kDir + file);
    ASSERT_EQ(t.size(), 17u);
    EXPECT_EQ(t.keys().front(), "f32");  // the file's order
    expect_values(t["f32"], {-0.5, -0.25, 0.0, 0.25, 0.5, 0.75});
    EXPECT_EQ(t["f32"].sizes(), IntArrayRef({2, 3}));
    EXPECT_EQ(t["f64"].dtype(), kFloat64);
    EXPECT_EQ(values(t["f64"]), (std::vector<double>{0.1, -2.5, 1e300}));
    EXPECT_EQ(t["f16"].dtype(), kFloat16);
    EXPECT_EQ(values(t["f16"]), (std::vector<double>{1.5, -2.0, 65504.0}));
    EXPECT_EQ(t["bf16"].dtype(), kBFloat16);
    EXPECT_EQ(values(t["bf16"]), (std::vector<double>{1.0, -0.375}));
    EXPECT_EQ(t["i64"].dtype(), kInt64);
    EXPECT_EQ(t["i64"][3].item<int64_t>(), int64_t(1) << 40);
    EXPECT_EQ(values(t["i32"]), (std::vector<double>{-7, 123456}));
    EXPECT_EQ(t["i32"].dtype(), kInt32);
    EXPECT_EQ(values(t["i8"]), (std::vector<double>{-128, 5}));
    EXPECT_EQ(t["i8"].dtype(), kInt8);
    EXPECT_EQ(values(t["u8"]), (std::vector<double>{0, 127, 255}));
    EXPECT_EQ(t["u8"].dtype(), kUInt8);
    EXPECT_EQ(values(t["bool"]), (std::vector<double>{1, 0, 0, 1}));
    EXPECT_EQ(t["bool"].dtype(), kBool);
    EXPECT_EQ(t["scalar"].dim(), 0);
    EXPECT_EQ(t["scalar"].item<float>(), 3.5f);
    EXPECT_EQ(t["empty"].sizes(), IntArrayRef({0, 2}));
    // Views of one storage [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]: each has its own values.
    expect_values(t["base"], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    expect_values(t["transposed"], {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    EXPECT_EQ(t["transposed"].sizes(), IntArrayRef({4, 3}));
    expect_values(t["slice"], {5, 6, 9, 10});
    expect_values(t["expanded"], {1, 2, 1, 2, 1, 2});
    expect_values(t["parameter"], {1, -1});  // nn.Parameters, one with a Python attribute
    expect_values(t["parameter_with_state"], {0.5});
  }
}

TEST(PytorchLoad, EveryWriterGivesTheSameStateDict) {
  const auto saved = load_state_dict(kDir + "net_state_dict.pt");
  EXPECT_EQ(saved.size(), TorchNet()->state_dict().size());
  for (const std::string file : {"net_state_dict_p4.pt", "net_scripted.pt"}) {
    SCOPED_TRACE(file);
    const auto other = load_state_dict(kDir + file);
    ASSERT_EQ(other.size(), saved.size());
    for (const auto& item : saved) {
      ASSERT_TRUE(other.contains(item.key())) << item.key();
      expect_same_bits(other[item.key()], item.value(), item.key());
    }
  }
}

TEST(PytorchLoad, ModuleReproducesPyTorchOutputs) {
  const auto io = load_state_dict(kDir + "net_io.pt");
  for (const std::string file : {"net_state_dict.pt", "net_state_dict_p4.pt", "net_scripted.pt"}) {
    SCOPED_TRACE(file);
    manual_seed(1);
    TorchNet net;
    load_state_dict(net, kDir + file);
    net->eval();
    testing::expect_tensors_close(net->forward(io["input"]), io["output"], 1e-5, 1e-5);
    const auto state = net->state_dict();
    EXPECT_EQ(values(state["scale64"]), (std::vector<double>{0.5, 2.0}));
    EXPECT_EQ(values(state["table16"]), (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(values(state["table_bf16"]), (std::vector<double>{1.0, -0.375}));
    EXPECT_EQ(state["steps"][1].item<int64_t>(), int64_t(1) << 40);
    EXPECT_EQ(values(state["mask"]), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(state["features.1.num_batches_tracked"].item<int64_t>(), 3);
    EXPECT_FALSE(state["head.1.weight"].grad().defined());
    EXPECT_TRUE(state["head.1.weight"].requires_grad());
  }
}

TEST(PytorchLoad, HolderSharedPointerAndModuleReference) {
  const auto saved = load_state_dict(kDir + "net_state_dict.pt");
  auto shared = std::make_shared<TorchNetImpl>();
  load_state_dict(shared, kDir + "net_state_dict.pt");
  TorchNetImpl plain;
  load_state_dict(static_cast<nn::Module&>(plain), kDir + "net_state_dict.pt");
  for (const nn::Module* m : {static_cast<nn::Module*>(shared.get()), static_cast<nn::Module*>(&plain)})
    for (const auto& item : m->state_dict()) expect_same_bits(item.value(), saved[item.key()], item.key());
}

// ---- what does not fit the module ----

struct FloatStepsImpl : nn::Module {  // the file's int64 `steps` as float32
  FloatStepsImpl() { register_buffer("steps", zeros({2})); }
};
NNVM_MODULE(FloatSteps);

TEST(PytorchLoad, KeysThatDoNotFit) {
  const std::string path = kDir + "net_state_dict.pt";
  auto net = std::make_shared<TorchNetExtraImpl>();
  expect_error([&] { load_state_dict(net, path); }, {"load_state_dict", path, "missing entry 'extra'"});
  const Tensor before = net->state_dict()["head.3.bias"].clone();
  load_state_dict(net, path, /*strict=*/false);
  EXPECT_NE(values(net->state_dict()["head.3.bias"]), values(before));

  TorchNet small;
  small->features->unregister_module("1");  // no batch norm
  expect_error([&] { load_state_dict(small, path); }, {path, "unexpected entry 'features.1.weight'"});
  load_state_dict(small, path, /*strict=*/false);

  struct WideImpl : nn::Module {
    WideImpl() { register_module("head", nn::Sequential(nn::Flatten(), nn::Linear(64, 17))); }
  };
  auto wide = std::make_shared<WideImpl>();
  expect_error([&] { load_state_dict(wide, path, false); },
               {path, "entry 'head.1.weight' has shape [16, 64] but the module expects [17, 64]"});

  FloatSteps steps;
  expect_error([&] { load_state_dict(steps, path, false); },
               {path, "entry 'steps' is int64 but the module's is float32"});
}

TEST(PytorchLoad, FloatingEntriesConvertAndNothingChangesOnError) {
  const std::string path = kDir + "net_state_dict.pt";
  TorchNet net;
  net->to(kFloat64);  // the file's float32 weights load into float64 parameters; scale64 into float64 too
  load_state_dict(net, path);
  const auto saved = load_state_dict(path);
  EXPECT_EQ(net->state_dict()["head.3.bias"].dtype(), kFloat64);
  expect_values(net->state_dict()["head.3.bias"], values(saved["head.3.bias"]), 0, 0);

  auto other = std::make_shared<TorchNetExtraImpl>();
  const std::vector<double> before = values(other->state_dict()["head.3.bias"]);
  EXPECT_THROW(load_state_dict(other, path), Error);
  EXPECT_EQ(values(other->state_dict()["head.3.bias"]), before);
}

// ---- refusals ----

TEST(PytorchRefuse, PicklesThatNameCode) {
  // eval("1+1"): GLOBAL builtins.eval, then REDUCE.
  expect_refused(archive("\x80\x02" + global("builtins", "eval") + str("1+1") + "\x85R."),
                 {"archive/data.pkl", "byte 2", "GLOBAL 'builtins.eval' is not allowed"});
  expect_refused(archive("\x80\x02" + global("os", "system") + str("touch /tmp/nnvm_pwned") + "\x85R."),
                 {"GLOBAL 'os.system' is not allowed"});
  // The same call by protocol 4's STACK_GLOBAL.
  expect_refused(archive("\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93" + str("true") + "\x85R."),
                 {"byte 16", "GLOBAL 'os.system'"});
  expect_refused(archive("\x80\x02" + global("numpy.core.multiarray", "_reconstruct") + "."),
                 {"'numpy.core.multiarray._reconstruct' is not allowed"});
  // REDUCE of something that is not an allowed name, and opcodes torch never writes.
  expect_refused(archive("\x80\x02" + str("os.system") + ")R."), {"byte 17", "REDUCE calls a string"});
  expect_refused(archive("\x80\x02S'ls'\n."), {"byte 2", "opcode STRING is not allowed"});
  expect_refused(archive("\x80\x02(i."), {"byte 3", "opcode INST is not allowed"});
  expect_refused(archive("\x80\x02\xff."), {"unknown opcode 0xff"});
  EXPECT_FALSE(std::filesystem::exists("/tmp/nnvm_pwned"));
}

TEST(PytorchRefuse, TensorsNnvmCannotHold) {
  expect_refused(archive(dict({{"w", tensor("ShortStorage", "0", 2, 0, {2}, {1})}}), {{"0", le(0, 4)}}),
                 {"torch.ShortStorage", "int16"});
  expect_refused(archive(dict({{"w", tensor("ComplexFloatStorage", "0", 1, 0, {1}, {1})}}), {{"0", le(0, 8)}}),
                 {"torch.ComplexFloatStorage"});
  expect_refused(archive("\x80\x02" + global("torch._utils", "_rebuild_qtensor") + "."), {"quantized"});
  // A tensor that reads past its storage, a storage entry shorter than it claims, a missing storage.
  const std::string four = floats({1, 2, 3, 4});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 4, 2, {3}, {1})}}), {{"0", four}}),
                 {"entry", "storage '0'", "reads element 4, past the storage"});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 4, 0, {2, 2}, {3, 1})}}), {{"0", four}}),
                 {"reads element 4"});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 5, 0, {4}, {1})}}), {{"0", four}}),
                 {"storage '0' holds 16 bytes, fewer than its 5 elements"});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "1", 4, 0, {4}, {1})}}), {{"0", four}}),
                 {"entry 'w': its storage '1' has no zip entry archive/data/1"});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 4, 0, {2}, {-1})}}), {{"0", four}}),
                 {"negative"});
  expect_refused(archive(dict({{"b", tensor("BoolStorage", "0", 2, 0, {2}, {1})}}), {{"0", "\x01\x02"}}),
                 {"a bool other than 0 or 1"});
  // A view that overlaps itself a billion times over.
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 4, 0, {1 << 15, 1 << 15}, {0, 0})}}), {{"0", four}}),
                 {"overlapping views"});
  // What torch.save writes, read back by hand: the same values.
  const auto t = load_state_dict(TempFile(archive(dict({{"w", tensor("FloatStorage", "0", 4, 1, {2, 2}, {0, 2})}}),
                                                      {{"0", four}}))
                                     .path());
  expect_values(t["w"], {2, 4, 2, 4});
}

TEST(PytorchRefuse, FilesThatAreNotStateDicts) {
  const std::string four = floats({1, 2, 3, 4});
  expect_refused(
      archive("\x80\x02}(" + str("model") + "}(" + str("w") + tensor("FloatStorage", "0", 4, 0, {4}, {1}) + "uu.",
              {{"0", four}}),
      {"entry 'model' holds a dict, not a tensor", "nests the state dict"});
  expect_refused(archive("\x80\x02}(" + str("epoch") + integer(3) + "u."),
                 {"entry 'epoch' holds an int, not a tensor"});
  expect_refused(archive("\x80\x02" + str("hello") + "."), {"holds a string, not a state dict"});
  expect_refused(archive(dict({{"w", tensor("FloatStorage", "0", 4, 0, {4}, {1})},
                               {"w", tensor("FloatStorage", "0", 4, 0, {4}, {1})}}),
                         {{"0", four}}),
                 {"entry 'w' appears twice"});
  // The legacy format: pickles back to back, no zip.
  expect_refused("\x80\x02\x8a\x0al\xfc\x9c" "F\xf9 j\xa8P\x19."s, {"legacy torch.save file"});
  expect_refused(zip_of({{"model/weights.bin", "x"}}), {"no <archive>/data.pkl entry"});
  expect_refused(zip_of({{"archive/data.pkl", dict({})}, {"archive/byteorder", "big"}}), {"byteorder is 'big'"});
  // A TorchScript object that holds itself.
  expect_refused(archive("\x80\x02" + global("__torch__", "Loop") + ")\x81q\x00}("s + str("self") + "h\x00ub."s),
                 {"modules nest more than 100 deep"});
  // ... under a long name, whose copies would run to gigabytes by that depth.
  expect_refused(archive("\x80\x02" + global("__torch__", "Loop") + ")\x81q\x00}("s + str(std::string(100000, 'k')) +
                         "h\x00ub."s),
                 {"the modules' names take more bytes than data.pkl could spell out"});
  // A TorchScript class with __setstate__: its state is not a dict of attributes.
  expect_refused(archive("\x80\x02" + global("__torch__", "Packed") + ")\x81" + str("opaque") + "b."),
                 {"the root module (__torch__.Packed) has a string as its state"});
}

TEST(PytorchRefuse, MissingAndEmptyFiles) {
  expect_error([] { load_state_dict("/nonexistent/model.pt"); },
               {"load_state_dict", "cannot open /nonexistent/model.pt"});
  expect_refused("", {"not a zip archive"});
  expect_error([] { load_state_dict(std::filesystem::temp_directory_path().string()); }, {"not a regular file"});
}

// Every prefix of a real file, and the file with one byte changed anywhere:
// an nnvm::Error or, where the change hit a field nothing reads (a
// timestamp, padding), the same tensors, but never a crash.
void expect_damage_detected(const std::string& file, size_t stride) {
  const std::string bytes = read_bytes(kDir + file);
  const auto good = load_state_dict(kDir + file);
  size_t detected = 0;
  for (size_t n = 0; n < bytes.size(); n += (n < 256 || bytes.size() - n < 256) ? 1 : stride) {
    EXPECT_FALSE(load_error(bytes.substr(0, n)).empty()) << file << " truncated to " << n << " bytes loaded";
  }
  for (size_t at = 0; at < bytes.size(); at += stride) {
    std::string damaged = bytes;
    damaged[at] = char(damaged[at] ^ 0x5a);
    const TempFile temp(damaged);
    try {
      const auto loaded = load_state_dict(temp.path());
      ASSERT_EQ(loaded.size(), good.size()) << file << " byte " << at;
      for (const auto& item : good) expect_same_bits(loaded[item.key()], item.value(), item.key());
    } catch (const Error&) {
      ++detected;
    }
  }
  EXPECT_GT(detected, 0u) << file;  // entries nothing reads (TorchScript's code) are not checked
}

TEST(PytorchRefuse, TruncatedAndCorruptedFiles) {
  expect_damage_detected("tensors.pt", 1);
  expect_damage_detected("tensors_rezipped.pt", 1);
  expect_damage_detected("net_scripted.pt", 11);
}

}  // namespace
}  // namespace nnvm
