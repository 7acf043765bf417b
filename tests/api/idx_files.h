// Small IDX files written by the data tests (data_test, data_pipeline_test)
// into a directory of their own, removed after each test.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nnvm::testing {

inline std::vector<uint8_t> idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> bytes = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(uint8_t(d >> shift));
  return bytes;
}

// Appends `v` big-endian.
template <class T> void put(std::vector<uint8_t>& bytes, T v) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  if (std::endian::native == std::endian::little) std::reverse(raw, raw + sizeof(T));
  bytes.insert(bytes.end(), raw, raw + sizeof(T));
}

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("nnvm_data_") + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes, bool gzip = false) {
    const std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                  std::streamsize(bytes.size()));
    }
    return path;
  }

  // `count` images whose pixel p of image i is (i * 7 + p) % 256 (pixel(i, p) / 255 once read).
  static std::vector<uint8_t> images_file(uint32_t count, uint32_t side = 28) {
    std::vector<uint8_t> bytes = idx_header(0x08, {count, side, side});
    for (uint32_t i = 0; i < count; ++i)
      for (uint32_t p = 0; p < side * side; ++p) bytes.push_back(uint8_t(pixel(i, p)));
    return bytes;
  }
  static uint32_t pixel(uint32_t i, uint32_t p) { return (i * 7 + p) % 256; }
  // Labels (first + i) % 10.
  static std::vector<uint8_t> labels_file(uint32_t count, uint8_t first = 0) {
    std::vector<uint8_t> bytes = idx_header(0x08, {count});
    bytes[3] = 1;
    for (uint32_t i = 0; i < count; ++i) bytes.push_back(uint8_t((first + i) % 10));
    return bytes;
  }

  std::filesystem::path dir_;
};

}  // namespace nnvm::testing
