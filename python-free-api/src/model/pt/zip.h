// A minimal zip reader for PyTorch's archives (torch.save since 1.6 and
// torch.jit.save write zips): the central directory of an archive held in
// memory, and each entry's bytes on demand, stored or deflated, CRC-checked.
// pytorch.cpp reads data.pkl and the storages under data/ through it.
//
// Nothing in the archive is trusted: every offset and size is checked against
// the bytes before it is used, so a truncated or corrupted archive is an
// nnvm::Error naming the entry, never a crash or an over-read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace nnvm::pt {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated; others are refused when read
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, size = 0;
  uint64_t local_header_offset = 0;
};

class ZipArchive {
 public:
  // `bytes` must outlive the archive. `where` starts every error message
  // ("load_state_dict: model.pt"). Throws nnvm::Error on a damaged directory.
  ZipArchive(std::string_view bytes, std::string where);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The entry's bytes: a view into the archive when stored, into `scratch`
  // when deflated. Throws nnvm::Error naming the entry when they do not check.
  std::string_view read(const ZipEntry& entry, std::string& scratch) const;

 private:
  void read_directory();
  std::string_view inflate(const ZipEntry& entry, std::string_view packed, std::string& out) const;
  // The bytes [at, at + n) of the archive; throws naming `what` when they are not all there.
  std::string_view span(uint64_t at, uint64_t n, std::string_view what) const;
  template <class... Pieces> [[noreturn]] void fail(const Pieces&... pieces) const;

  std::string_view bytes_;
  std::string where_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

// A file mapped read-only into memory, unmapped when destroyed.
class MappedFile {
 public:
  // Throws nnvm::Error("<op>: cannot open <path>: <reason>").
  MappedFile(const std::string& path, std::string_view op);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nnvm::pt
