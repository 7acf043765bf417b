// IDX reading through zlib's gz* functions, which read gzip streams and, in
// their transparent mode, plain files alike.
#include "nnvm/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <absl/strings/str_format.h>

#include "nnvm/core/functions.h"

namespace nnvm::data {
namespace {

class GzFile {
 public:
  GzFile(std::string op, std::string path) : op_(std::move(op)), path_(std::move(path)) {
    errno = 0;
    file_ = gzopen(path_.c_str(), "rb");
    NNVM_CHECK(file_ != nullptr, op_, path_, ": cannot open (",
               errno ? std::strerror(errno) : "out of memory", ")");
  }
  ~GzFile() { gzclose(file_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes; fewer only at the end of the data.
  size_t read(void* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      const unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
      const int got = gzread(file_, static_cast<char*>(dst) + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        throw Error(detail::concat(op_, ": ", path_, ": read failed (", msg, ")"));
      }
      if (got == 0) break;
      done += size_t(got);
    }
    return done;
  }

 private:
  std::string op_, path_;
  gzFile file_ = nullptr;
};

struct IdxType {
  uint8_t code;
  DType dtype;
  const char* name;
};
constexpr IdxType kTypes[] = {{0x08, kUInt8, "uint8"},
                              {0x09, kInt8, "int8"},
                              {0x0C, kInt32, "int32"},
                              {0x0D, kFloat32, "float32"},
                              {0x0E, kFloat64, "float64"}};

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

std::string hex(uint32_t v) { return absl::StrFormat("0x%08x", v); }

// expected_magic: the whole 4-byte magic a typed reader insists on, with what it means.
Tensor read(const std::string& op, const std::string& path, std::optional<uint32_t> expected_magic,
            const char* expected_what) {
  GzFile file(op, path);
  uint8_t head[4];
  const size_t got = file.read(head, 4);
  NNVM_CHECK(got == 4, op, path, ": truncated: ", got, " bytes, expected a 4-byte IDX magic number");
  const uint32_t magic = big_endian_u32(head);
  if (expected_magic) {
    NNVM_CHECK(magic == *expected_magic, op, path, ": magic number ", hex(magic), ", expected ",
               hex(*expected_magic), " (", expected_what, ")");
  }
  NNVM_CHECK(head[0] == 0 && head[1] == 0, op, path, ": magic number ", hex(magic),
             " is not IDX, expected 0x0000TTRR (type TT, rank RR)");
  const IdxType* type = nullptr;
  for (const IdxType& t : kTypes)
    if (t.code == head[2]) type = &t;
  NNVM_CHECK(type != nullptr, op, path, ": unsupported IDX type code ", absl::StrFormat("0x%02x", head[2]),
             ", expected 0x08, 0x09, 0x0C, 0x0D or 0x0E");
  const int rank = head[3];
  NNVM_CHECK(rank >= 1, op, path, ": IDX rank 0, expected at least 1 dim");

  std::vector<uint8_t> dims_raw(size_t(rank) * 4);
  const size_t dims_got = file.read(dims_raw.data(), dims_raw.size());
  NNVM_CHECK(dims_got == dims_raw.size(), op, path, ": truncated header: ", 4 + dims_got, " bytes, expected ",
             4 + dims_raw.size(), " for rank ", rank);
  DimVector shape;
  const size_t elem = itemsize(type->dtype);
  uint64_t bytes = elem;
  for (int d = 0; d < rank; ++d) {
    shape.push_back(big_endian_u32(&dims_raw[size_t(d) * 4]));
    NNVM_CHECK(!__builtin_mul_overflow(bytes, uint64_t(shape.back()), &bytes) && bytes < (uint64_t(1) << 62),
               op, path, ": header sizes ", shape_str(shape), " overflow");
  }

  // Grows the buffer as data arrives, so a corrupt header cannot make us
  // allocate more than the file holds.
  std::vector<uint8_t> body;
  size_t done = 0, step = size_t(1) << 20;
  while (done < bytes) {
    body.resize(std::min<uint64_t>(bytes, done + step));
    const size_t n = file.read(body.data() + done, body.size() - done);
    done += n;
    if (done < body.size()) break;
    step *= 2;
  }
  NNVM_CHECK(done == bytes, op, path, ": truncated: ", done, " data bytes, expected ", bytes, " for ",
             type->name, " ", shape_str(shape));
  uint8_t extra;
  NNVM_CHECK(file.read(&extra, 1) == 0, op, path, ": data continues past the ", bytes, " bytes of ",
             type->name, " ", shape_str(shape), " the header announces");

  Tensor out = empty(shape, type->dtype);
  if (bytes == 0) return out;  // memcpy must not see the empty body's null pointer
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  if (elem == 1 || std::endian::native == std::endian::big) {
    std::memcpy(dst, body.data(), bytes);
  } else {
    for (uint64_t i = 0; i < bytes; i += elem)
      std::reverse_copy(body.data() + i, body.data() + i + elem, dst + i);
  }
  return out;
}

}  // namespace

Tensor read_idx(const std::string& path) { return read("read_idx", path, std::nullopt, nullptr); }

Tensor read_idx_images(const std::string& path) {
  return read("read_idx_images", path, 0x00000803u, "idx3 unsigned-byte images");
}

Tensor read_idx_labels(const std::string& path) {
  return read("read_idx_labels", path, 0x00000801u, "idx1 unsigned-byte labels");
}

}  // namespace nnvm::data
