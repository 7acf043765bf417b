// The zip reader of pt/zip.h. Offsets are those of the PKWARE APPNOTE
// (sections 4.3.7 local header, 4.3.12 central directory header, 4.3.14-16
// zip64 end records, 4.5.3 zip64 extra field). The central directory is the
// truth: torch.save writes local headers with zero sizes and a data
// descriptor after the data (flag bit 3), so sizes and CRCs come from it.
#include "zip.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "nnvm/core/error.h"

namespace nnvm::pt {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr uint64_t kLocalHeaderSize = 30, kCentralHeaderSize = 46, kEndSize = 22;
constexpr uint64_t kZip64EndSize = 56, kZip64LocatorSize = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kSaturated32 = 0xffffffff;
constexpr uint16_t kSaturated16 = 0xffff;
// Deflate cannot expand by more than 1032:1 (a 258-byte match in at most two
// bits): an entry that claims more is corrupt, and is refused before its
// declared size is allocated.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint64_t le(std::string_view s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(s[at + size_t(i)])) << (8 * i);
  return v;
}

}  // namespace

template <class... Pieces> void ZipArchive::fail(const Pieces&... pieces) const {
  throw Error(detail::concat(where_, ": ", pieces...));
}

std::string_view ZipArchive::span(uint64_t at, uint64_t n, std::string_view what) const {
  if (at > bytes_.size() || n > bytes_.size() - at)
    fail(what, " (bytes ", at, " to ", at, " + ", n, ") lies past the end of the ", bytes_.size(),
         "-byte file (truncated?)");
  return bytes_.substr(size_t(at), size_t(n));
}

ZipArchive::ZipArchive(std::string_view bytes, std::string where) : bytes_(bytes), where_(std::move(where)) {
  read_directory();
}

void ZipArchive::read_directory() {
  // The end record is the last 22 bytes unless a comment (at most 65535 bytes) follows it.
  if (bytes_.size() < kEndSize) fail("not a zip archive: ", bytes_.size(), " bytes is too short");
  const uint64_t lowest = bytes_.size() - kEndSize - std::min<uint64_t>(bytes_.size() - kEndSize, kSaturated16);
  uint64_t end = bytes_.size() - kEndSize;
  while (le(bytes_, end, 4) != kEnd || end + kEndSize + le(bytes_, end + 20, 2) > bytes_.size()) {
    if (end == lowest) fail("not a zip archive (no end of central directory record)");
    --end;
  }

  uint64_t disk = le(bytes_, end + 4, 2), directory_disk = le(bytes_, end + 6, 2);
  uint64_t count = le(bytes_, end + 10, 2), directory_size = le(bytes_, end + 12, 4);
  uint64_t directory_offset = le(bytes_, end + 16, 4);
  if (end >= kZip64LocatorSize && le(bytes_, end - kZip64LocatorSize, 4) == kZip64Locator) {
    const uint64_t at = le(bytes_, end - kZip64LocatorSize + 8, 8);
    const std::string_view record = span(at, kZip64EndSize, "the zip64 end of central directory record");
    if (le(record, 0, 4) != kZip64End) fail("the zip64 end of central directory record has a bad signature");
    disk = le(record, 16, 4);
    directory_disk = le(record, 20, 4);
    count = le(record, 32, 8);
    directory_size = le(record, 40, 8);
    directory_offset = le(record, 48, 8);
  } else if (count == kSaturated16 || directory_size == kSaturated32 || directory_offset == kSaturated32) {
    fail("the end of central directory record needs a zip64 record, and there is none");
  }
  if (disk != 0 || directory_disk != 0) fail("multi-disk zip archives are not supported");
  const std::string_view directory = span(directory_offset, directory_size, "the central directory");
  if (count > directory.size() / kCentralHeaderSize)
    fail("the central directory of ", directory.size(), " bytes cannot hold the ", count, " entries it claims");

  size_t at = 0;
  entries_.reserve(size_t(count));
  for (uint64_t i = 0; i < count; ++i) {
    if (directory.size() - at < kCentralHeaderSize || le(directory, at, 4) != kCentralHeader)
      fail("central directory entry ", i, " is damaged");
    const uint64_t name_size = le(directory, at + 28, 2), extra_size = le(directory, at + 30, 2);
    const uint64_t comment_size = le(directory, at + 32, 2);
    if (directory.size() - at - kCentralHeaderSize < name_size + extra_size + comment_size)
      fail("central directory entry ", i, " runs past the directory");
    ZipEntry e;
    e.flags = uint16_t(le(directory, at + 8, 2));
    e.method = uint16_t(le(directory, at + 10, 2));
    e.crc32 = uint32_t(le(directory, at + 16, 4));
    e.compressed_size = le(directory, at + 20, 4);
    e.size = le(directory, at + 24, 4);
    e.local_header_offset = le(directory, at + 42, 4);
    e.name = std::string(directory.substr(at + kCentralHeaderSize, size_t(name_size)));
    // The zip64 extra field holds, in this order, each of the three fields that is saturated.
    std::string_view extra = directory.substr(at + kCentralHeaderSize + name_size, size_t(extra_size));
    const bool saturated[3] = {e.size == kSaturated32, e.compressed_size == kSaturated32,
                               e.local_header_offset == kSaturated32};
    uint64_t* const fields[3] = {&e.size, &e.compressed_size, &e.local_header_offset};
    while (extra.size() >= 4) {
      const uint64_t id = le(extra, 0, 2), size = le(extra, 2, 2);
      if (size > extra.size() - 4) fail("entry '", e.name, "': an extra field runs past its header");
      if (id == kZip64ExtraId) {
        size_t field_at = 4;
        for (int f = 0; f < 3; ++f) {
          if (!saturated[f]) continue;
          if (field_at + 8 > 4 + size) fail("entry '", e.name, "': the zip64 extra field is too short");
          *fields[f] = le(extra, field_at, 8);
          field_at += 8;
        }
      }
      extra.remove_prefix(size_t(4 + size));
    }
    for (int f = 0; f < 3; ++f)
      if (saturated[f] && *fields[f] == kSaturated32) fail("entry '", e.name, "' needs a zip64 extra field");
    if (!by_name_.emplace(e.name, entries_.size()).second) fail("entry '", e.name, "' appears twice");
    entries_.push_back(std::move(e));
    at += size_t(kCentralHeaderSize + name_size + extra_size + comment_size);
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  const auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : &entries_[found->second];
}

std::string_view ZipArchive::read(const ZipEntry& e, std::string& scratch) const {
  if (e.flags & 1) fail("entry '", e.name, "' is encrypted");
  const std::string label = "entry '" + e.name + "'";
  const std::string_view local = span(e.local_header_offset, kLocalHeaderSize, label + "'s local header");
  if (le(local, 0, 4) != kLocalHeader) fail(label, " has no local header at byte ", e.local_header_offset);
  const uint64_t name_size = le(local, 26, 2), extra_size = le(local, 28, 2);
  if (span(e.local_header_offset + kLocalHeaderSize, name_size, label + "'s local name") != e.name)
    fail(label, ": the local header names another entry");
  const uint64_t data_at = e.local_header_offset + kLocalHeaderSize + name_size + extra_size;
  const std::string_view packed = span(data_at, e.compressed_size, label + "'s data");

  std::string_view data;
  if (e.method == 0) {
    if (e.size != e.compressed_size)
      fail(label, " is stored uncompressed but its sizes differ (", e.compressed_size, " and ", e.size, ")");
    data = packed;
  } else if (e.method == 8) {
    data = inflate(e, packed, scratch);
  } else {
    fail(label, " uses compression method ", e.method, "; only stored (0) and deflate (8) are supported");
  }
  const uLong crc = crc32_z(0, reinterpret_cast<const Bytef*>(data.data()), data.size());
  if (crc != e.crc32) fail(label, " fails its CRC-32 check (damaged file)");
  return data;
}

std::string_view ZipArchive::inflate(const ZipEntry& e, std::string_view packed, std::string& out) const {
  if (e.size / kMaxDeflateRatio > packed.size())
    fail("entry '", e.name, "' claims ", e.size, " bytes from ", packed.size(),
         " deflated bytes, more than deflate can expand to");
  out.assign(size_t(e.size), '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail("entry '", e.name, "': zlib cannot start inflating");
  // zlib counts in 32-bit chunks: feed the input and the output a chunk at a time.
  uint64_t in_left = packed.size(), out_left = out.size();
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0) {
      zs.avail_in = uInt(std::min<uint64_t>(in_left, UINT_MAX));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0) {
      zs.avail_out = uInt(std::min<uint64_t>(out_left, UINT_MAX));
      out_left -= zs.avail_out;
    }
    rc = ::inflate(&zs, Z_NO_FLUSH);
  }
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc == Z_DATA_ERROR) fail("entry '", e.name, "' holds corrupt deflate data");
  if (rc != Z_STREAM_END || produced != e.size)
    fail("entry '", e.name, "' does not inflate to its declared ", e.size, " bytes");
  return out;
}

MappedFile::MappedFile(const std::string& path, std::string_view op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  NNVM_CHECK(fd >= 0, op, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  size_ = regular ? size_t(st.st_size) : 0;
  if (regular && size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) data_ = nullptr;
  }
  const int mapping_errno = errno;
  ::close(fd);
  NNVM_CHECK(regular, op, "cannot open ", path, ": not a regular file");
  NNVM_CHECK(size_ == 0 || data_ != nullptr, op, "cannot map ", path, ": ", std::strerror(mapping_errno));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace nnvm::pt
