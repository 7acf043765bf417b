// safetensors: a fixture written by tests/data/make_safetensors_fixture.py
// (from the published format, with json and struct only), round trips through
// nn::save / nn::load, and corrupted files.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;

const std::string kFixture = std::string(NNVM_TEST_DATA_DIR) + "/fixture.safetensors";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("nnvm_api_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// A file with the given header text (padded by nothing) and `data` bytes.
std::string make_file(const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

TEST(ApiSerialize, ReadsIndependentFixture) {
  const nn::SafetensorsFile file = nn::read_safetensors(kFixture);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_EQ(file.metadata.at("note"), "made by make_safetensors_fixture.py");
  EXPECT_EQ(file.tensors.size(), 10u);
  const auto& t = file.tensors;
  EXPECT_EQ(t.at("weight").dtype(), kFloat32);
  EXPECT_EQ(t.at("weight").sizes(), IntArrayRef({2, 3}));
  std::vector<double> weight;
  for (int i = 0; i < 6; ++i) weight.push_back(i * 0.25 - 0.5);
  testing::expect_values(t.at("weight"), weight, 0, 0);
  EXPECT_EQ(t.at("ids").to_vector<int64_t>(), (std::vector<int64_t>{-3, 0, 7, int64_t(1) << 40}));
  EXPECT_EQ(t.at("scale").dim(), 0);
  EXPECT_EQ(t.at("scale").item<double>(), 0.1);
  EXPECT_EQ(t.at("half").dtype(), kFloat16);
  testing::expect_values(t.at("half"), {1.5, -2.0, 65504.0}, 0, 0);
  EXPECT_EQ(t.at("bf").dtype(), kBFloat16);
  testing::expect_values(t.at("bf"), {1.0, -0.375}, 0, 0);
  EXPECT_EQ(t.at("flags").dtype(), kBool);
  EXPECT_EQ(t.at("flags").to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(t.at("bytes").to_vector<uint8_t>(), (std::vector<uint8_t>{0, 127, 255}));
  EXPECT_EQ(t.at("counts").to_vector<int32_t>(), (std::vector<int32_t>{-7, 123456}));
  EXPECT_EQ(t.at("small").to_vector<int8_t>(), (std::vector<int8_t>{-128, 5}));
  EXPECT_EQ(t.at("empty").sizes(), IntArrayRef({0, 2}));
}

TEST(ApiSerialize, RoundTripsTensorsAndMetadata) {
  const std::string path = temp_path("roundtrip.safetensors");
  std::map<std::string, Tensor> tensors = {
      {"a/b \"quoted\"", testing::random({3, 4}, kFloat32, 1).t()},  // non-contiguous, odd name
      {"d", testing::random({2}, kFloat64, 2)},
      {"h", testing::random({5}, kFloat16, 3)},
      {"i", arange(6, kInt64).view({2, 3})},
      {"z", zeros({0})},
  };
  nn::save_safetensors(tensors, path, {{"k", "v\n"}});
  const std::string bytes = read_bytes(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);  // data aligned
  EXPECT_EQ(bytes[8], '{');
  const nn::SafetensorsFile back = nn::read_safetensors(path);
  EXPECT_EQ(back.metadata.at("k"), "v\n");
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    EXPECT_EQ(back.tensors.at(name).dtype(), t.dtype()) << name;
    testing::expect_tensors_close(back.tensors.at(name), t, 0, 0);
  }
  std::filesystem::remove(path);
  testing::expect_error([&] { nn::save_safetensors({{"__metadata__", zeros({1})}}, path); },
                        {"save_safetensors", "reserved"});
  testing::expect_error([&] { nn::save_safetensors({{"x", Tensor()}}, path); }, {"save_safetensors", "undefined"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ApiSerialize, ModuleSaveLoad) {
  const std::string path = temp_path("module.safetensors");
  manual_seed(1);
  nn::Sequential a(nn::Conv2d(1, 2, 3), nn::BatchNorm2d(2), nn::Flatten(), nn::Linear(2 * 4 * 4, 3));
  a(randn({2, 1, 6, 6}));  // moves the running statistics away from their start
  nn::save(a, path);
  manual_seed(2);
  nn::Sequential b(nn::Conv2d(1, 2, 3), nn::BatchNorm2d(2), nn::Flatten(), nn::Linear(2 * 4 * 4, 3));
  nn::load(b, path);
  for (const auto& item : a->state_dict())
    testing::expect_tensors_close(b->state_dict()[item.key()], item.value(), 0, 0);
  a->eval();
  b->eval();
  const Tensor x = randn({1, 1, 6, 6});
  testing::expect_tensors_close(b(x), a(x), 0, 0);
  EXPECT_EQ(nn::read_safetensors(path).metadata.at("format"), "pt");

  nn::Sequential wrong_shape(nn::Conv2d(1, 3, 3), nn::BatchNorm2d(2), nn::Flatten(), nn::Linear(2 * 4 * 4, 3));
  const std::vector<double> before = testing::values(wrong_shape->state_dict()["3.weight"]);
  testing::expect_error([&] { nn::load(wrong_shape, path); }, {"nn::load", "'0.weight'", "[2, 1, 3, 3]", "[3, 1, 3, 3]"});
  testing::expect_values(wrong_shape->state_dict()["3.weight"], before, 0, 0);  // untouched
  nn::Sequential fewer(nn::Conv2d(1, 2, 3), nn::BatchNorm2d(2));
  testing::expect_error([&] { nn::load(fewer, path); }, {"nn::load", "unexpected", "'3."});
  nn::Sequential more(nn::Conv2d(1, 2, 3), nn::BatchNorm2d(2), nn::Flatten(), nn::Linear(2 * 4 * 4, 3),
                      nn::Linear(3, 3));
  testing::expect_error([&] { nn::load(more, path); }, {"nn::load", "missing", "'4.weight'"});
  nn::Sequential doubled(nn::Conv2d(1, 2, 3), nn::BatchNorm2d(2), nn::Flatten(), nn::Linear(2 * 4 * 4, 3));
  doubled->to(kFloat64);
  testing::expect_error([&] { nn::load(doubled, path); }, {"nn::load", "float32", "float64"});
  std::filesystem::remove(path);
}

TEST(ApiSerialize, RejectsCorruptedFiles) {
  const std::string path = temp_path("corrupt.safetensors");
  const std::string good = read_bytes(kFixture);
  auto expect_bad = [&](const std::string& bytes, std::initializer_list<std::string_view> pieces) {
    write_bytes(path, bytes);
    testing::expect_error([&] { nn::load_safetensors(path); }, pieces);
  };
  expect_bad(good.substr(0, 5), {"load_safetensors", "too short"});
  expect_bad(good.substr(0, 100), {"load_safetensors", "header length"});
  expect_bad(good.substr(0, good.size() - 1), {"load_safetensors", "truncated"});
  expect_bad(good + "x", {"load_safetensors", "cover"});
  const std::string data(8, '\0');
  const std::string entry = R"("dtype":"F32","shape":[2])";
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[0,8]}", data), {"bad JSON header"});
  expect_bad(make_file("[1, 2]", data), {"not a JSON object"});
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[0,8]},\"a\":{}}", data), {"duplicate key"});
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[0,4]}}", data), {"\"a\"", "do not span", "8 bytes"});
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[8,16]}}", data), {"\"a\"", "starts at byte 8"});
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[0,8]},\"b\":{" + entry + ",\"data_offsets\":[4,12]}}",
                       data + data),
             {"starts at byte 4", "overlapping"});
  expect_bad(make_file("{\"a\":{" + entry + ",\"data_offsets\":[16,24]}}", data + data + data),
             {"\"a\"", "starts at byte 16"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", data),
             {"data_offsets must be non-negative integers"});
  expect_bad(make_file(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", data),
             {"unsupported dtype", "F8_E4M3"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", data), {"shape"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2]}})", data), {"data_offsets"});
  expect_bad(make_file(R"({"a":{"dtype":"BOOL","shape":[8],"data_offsets":[0,8]}})", std::string(8, '\x02')),
             {"bool"});
  expect_bad(make_file("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", data), {"nesting too deep"});
  std::string huge = good;
  huge[7] = '\x7f';  // a header length beyond any file
  expect_bad(huge, {"header length"});
  testing::expect_error([&] { nn::load_safetensors(temp_path("missing.safetensors")); },
                        {"load_safetensors", "cannot open"});
  std::filesystem::remove(path);
}

// A header of n zero-size F32 tensors "t0000000", "t0000001", ... and `extra` members.
std::string many_tensors_header(int n, const std::string& extra = "") {
  std::string header = "{";
  for (int i = 0; i < n; ++i) {
    char member[96];
    std::snprintf(member, sizeof member, "%s\"t%07d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}",
                  i ? "," : "", i);
    header += member;
  }
  return header + extra + "}";
}

// The hostile headers fuzzing found: duplicate detection compared each key
// with every earlier one, so 80,000 keys took 18 s. Now a look-up per key
// (about 0.1 s to parse 80,000 by hand on a busy machine); the test asserts
// only the outcome.
TEST(ApiSerialize, HeadersWithManyKeys) {
  const std::string path = temp_path("many_keys.safetensors");
  write_bytes(path, make_file(many_tensors_header(80'000), ""));
  const std::map<std::string, Tensor> tensors = nn::load_safetensors(path);
  ASSERT_EQ(tensors.size(), 80'000u);
  EXPECT_EQ(tensors.at("t0079999").sizes(), (DimVector{0}));
  write_bytes(path, make_file(many_tensors_header(80'000, R"(,"t0012345":{})"), ""));
  testing::expect_error([&] { nn::load_safetensors(path); },
                        {"load_safetensors", path, "bad JSON header", "duplicate key \"t0012345\""});
  std::string keys = "{";  // 40,000 keys in 520 KB, none of them an entry
  for (int i = 0; i < 40'000; ++i) {
    char member[32];
    std::snprintf(member, sizeof member, "%s\"k%07d\":0", i ? "," : "", i);
    keys += member;
  }
  write_bytes(path, make_file(keys + "}", ""));
  testing::expect_error([&] { nn::load_safetensors(path); }, {path, "entry \"k0000000\" is not an object"});
  std::filesystem::remove(path);
}

TEST(ApiSerialize, RefusesHeadersPastTheLimit) {
  const std::string path = temp_path("huge_header.safetensors");
  const size_t limit = size_t(16) << 20;
  write_bytes(path, make_file("{}" + std::string(limit - 2, ' '), ""));  // at the limit: an empty file
  EXPECT_TRUE(nn::load_safetensors(path).empty());
  write_bytes(path, make_file("{}" + std::string(limit - 1, ' '), ""));
  testing::expect_error([&] { nn::load_safetensors(path); },
                        {"load_safetensors", path, "header length 16777217", "limit of 16777216 bytes"});
  std::filesystem::remove(path);
}

// A shape whose element count, or byte count, passes 64 bits: refused naming
// the file, the tensor and the shape (the byte count wrapped to 0 and matched
// the offsets [0, 0]; the allocation then failed without naming the file).
TEST(ApiSerialize, RefusesShapesPast64Bits) {
  const std::string path = temp_path("overflow.safetensors");
  auto expect_bad = [&](const std::string& header, std::initializer_list<std::string_view> pieces) {
    write_bytes(path, make_file(header, ""));
    testing::expect_error([&] { nn::load_safetensors(path); }, pieces);
  };
  expect_bad(R"({"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})",
             {"load_safetensors", path, "entry \"w\"", "shape [2305843009213693952]", "2^64 bytes"});
  expect_bad(R"({"w":{"dtype":"F64","shape":[2,1152921504606846976],"data_offsets":[0,0]}})",
             {path, "entry \"w\"", "a float64 tensor of shape [2, 1152921504606846976]", "2^64 bytes"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
             {path, "entry \"w\"", "shape [4294967296, 4294967296] multiplies past 2^63"});
  // empty, but its strides would still pass 2^63
  expect_bad(R"({"w":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})",
             {path, "entry \"w\"", "[0, 4294967296, 4294967296] multiplies past 2^63"});
  // the largest that fits: refused by the offsets, not the arithmetic
  expect_bad(R"({"w":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[0,0]}})",
             {path, "entry \"w\"", "do not span the 9223372036854775807 bytes"});
  std::filesystem::remove(path);
}

// JSON text is UTF-8: a name that is not cannot be written, nor read.
TEST(ApiSerialize, NamesMustBeUtf8) {
  const std::string path = temp_path("utf8.safetensors");
  testing::expect_error([&] { nn::save_safetensors({{"w\xff", zeros({1})}}, path); },
                        {"save_safetensors", "tensor name", "not valid UTF-8"});
  testing::expect_error([&] { nn::save_safetensors({{"w", zeros({1})}}, path, {{"note", "\xc3"}}); },
                        {"save_safetensors", "metadata \"note\"", "not valid UTF-8"});
  nn::save_safetensors({{"w\xc3\xa9", zeros({1})}}, path, {{"note", "\xe2\x82\xac\n\"\\"}});
  const nn::SafetensorsFile back = nn::read_safetensors(path);
  EXPECT_EQ(back.tensors.count("w\xc3\xa9"), 1u);
  EXPECT_EQ(back.metadata.at("note"), "\xe2\x82\xac\n\"\\");
  write_bytes(path, make_file("{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", ""));
  testing::expect_error([&] { nn::load_safetensors(path); }, {"load_safetensors", path, "bad JSON header", "UTF-8"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace nnvm
