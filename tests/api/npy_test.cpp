// .npy files (nnvm/npy.h): arrays NumPy wrote (tests/data/make_pytorch_fixtures.py)
// read by value, nnvm's files byte-identical to NumPy's, round trips of every
// dtype and layout, and the headers that are refused.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

using namespace std::string_literals;
using testing::expect_error;
using testing::values;

const std::string kDir = std::string(NNVM_TEST_DATA_DIR) + "/pytorch/";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Fixture {
  std::string file;
  DType dtype;
  std::vector<double> expected;  // (np.arange(6) * 3 - 5).astype(dtype), shape (2, 3)
};
const Fixture kFixtures[] = {
    {"f4.npy", kFloat32, {-5, -2, 1, 4, 7, 10}}, {"f8.npy", kFloat64, {-5, -2, 1, 4, 7, 10}},
    {"f2.npy", kFloat16, {-5, -2, 1, 4, 7, 10}}, {"i8.npy", kInt64, {-5, -2, 1, 4, 7, 10}},
    {"i4.npy", kInt32, {-5, -2, 1, 4, 7, 10}},   {"i1.npy", kInt8, {-5, -2, 1, 4, 7, 10}},
    {"u1.npy", kUInt8, {251, 254, 1, 4, 7, 10}}, {"b1.npy", kBool, {1, 0, 0, 1, 1, 0}},
};

TEST(Npy, NumpyFilesByValue) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.file);
    const Tensor t = load_npy(kDir + f.file);
    EXPECT_EQ(t.dtype(), f.dtype);
    EXPECT_EQ(t.sizes(), IntArrayRef({2, 3}));
    EXPECT_EQ(values(t), f.expected);
  }
  const Tensor fortran = load_npy(kDir + "fortran.npy");
  EXPECT_EQ(fortran.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(values(fortran), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  const Tensor scalar = load_npy(kDir + "scalar.npy");
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item<double>(), 2.5);
  EXPECT_EQ(load_npy(kDir + "empty.npy").sizes(), IntArrayRef({0, 3}));
  for (const std::string file : {"v2.npy", "v3.npy"}) {
    const Tensor t = load_npy(kDir + file);
    EXPECT_EQ(t.dtype(), kInt32) << file;
    EXPECT_EQ(values(t), (std::vector<double>{0, 1, 2, 3})) << file;
  }
}

TEST(Npy, WritesWhatNumpyWrites) {
  for (const std::string file : {"f4.npy", "f8.npy", "f2.npy", "i8.npy", "i4.npy", "i1.npy", "u1.npy", "b1.npy",
                                 "scalar.npy", "empty.npy"}) {
    const std::string numpy = read_bytes(kDir + file);
    EXPECT_EQ(npy_to_bytes(load_npy(kDir + file)), numpy) << file;
  }
}

TEST(Npy, RoundTripsEveryDtypeAndLayout) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("nnvm_npy_" + std::to_string(::getpid()) + ".npy")).string();
  for (const DType dtype : {kFloat64, kFloat32, kFloat16, kInt64, kInt32, kInt8, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor base = testing::random({3, 4, 5}, dtype, 7, 0, 100);
    for (const Tensor& t : {base, base.transpose(0, 2), base.index({indexing::Slice(), 1}), base[2][3][4],
                            base.index({indexing::Slice(0, 0)})}) {
      const Tensor back = npy_from_bytes(npy_to_bytes(t), "round trip");
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.sizes(), t.sizes());
      EXPECT_EQ(values(back), values(t));
      save_npy(t, path);
      EXPECT_EQ(values(load_npy(path)), values(t));
    }
  }
  std::filesystem::remove(path);
  expect_error([] { npy_to_bytes(zeros({2}, kBFloat16)); }, {"npy_to_bytes", "bfloat16 has no .npy dtype"});
  expect_error([] { npy_to_bytes(Tensor()); }, {"undefined"});
  expect_error([] { save_npy(zeros({2}), "/nonexistent/x.npy"); }, {"save_npy", "cannot create /nonexistent/x.npy"});
}

// A version 1.0 file with `header` (padded and ended as numpy does) and `data`.
std::string npy(std::string header, const std::string& data = "") {
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  return "\x93NUMPY\x01\x00"s + char(header.size() & 0xff) + char(header.size() >> 8) + header + data;
}

void expect_bad(const std::string& bytes, std::initializer_list<std::string_view> pieces) {
  expect_error([&] { npy_from_bytes(bytes, "bad.npy"); }, pieces);
}

TEST(Npy, BadHeaders) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string eight(8, '\0');
  ASSERT_EQ(values(npy_from_bytes(npy(f4, eight), "good")), (std::vector<double>{0, 0}));
  expect_bad("", {"npy_from_bytes: bad.npy", "no \\x93NUMPY magic"});
  expect_bad("PK\x03\x04", {"no \\x93NUMPY magic"});
  expect_bad("\x93NUMPY\x04\x00\x10\x00\x00\x00"s, {"format version 4.0 is not supported"});
  expect_bad("\x93NUMPY\x01\x00\xff\x00{"s, {"runs past the file"});
  expect_bad(npy(f4, std::string(4, '\0')), {"needs 2 elements but the file holds 4 data bytes"});
  expect_bad(npy(f4, std::string(12, '\0')), {"needs 2 elements but the file holds 12 data bytes"});
  expect_bad(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", eight), {"big-endian", "'>f4'"});
  expect_error([] { load_npy(kDir + "big_endian.npy"); }, {"load_npy", "big_endian.npy", "big-endian"});
  expect_bad(npy("{'descr': '<i2', 'fortran_order': False, 'shape': (4,), }", eight), {"dtype '<i2' is not one"});
  expect_bad(npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", eight), {"dtype '|O'"});
  expect_bad(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", eight), {"structured"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", eight), {"expected a dimension"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", eight), {"not True or False"});
  expect_bad(npy("{'descr': '<f4', 'shape': (2,), }", eight), {"needs 'descr', 'fortran_order' and 'shape'"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", eight), {"unknown header key 'x'"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", eight), {"text after the header"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"), {"too large"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
             {"too many elements"});
  expect_bad(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02"),
             {"a bool other than 0 or 1"});
  expect_bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", eight), {"expected"});
  expect_bad(npy("{'descr: '<f4'", eight), {"expected"});
  // Every prefix of a good file is refused.
  const std::string good = read_bytes(kDir + "f8.npy");
  for (size_t n = 0; n < good.size(); ++n) EXPECT_THROW(npy_from_bytes(good.substr(0, n), "prefix"), Error) << n;
}

}  // namespace
}  // namespace nnvm
