// core/text_file.h.
#include "nnvm/core/text_file.h"

#include <fstream>
#include <iterator>

#include "absl/strings/str_format.h"
#include "nnvm/core/error.h"

namespace nnvm {

void write_text_file(const std::string& path, std::string_view text, std::string_view op) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  NNVM_CHECK(file.good(), op, "cannot open '", path, "' for writing");
  file << text;
  file.close();
  NNVM_CHECK(!file.fail(), op, "cannot write '", path, "'");
}

std::string format_bytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  int64_t shown = bytes, scale = bytes < 0 ? -bytes : bytes;
  while (unit + 1 < std::size(kUnits) && scale >= 768 * 1024) {
    shown /= 1024;
    scale /= 1024;
    ++unit;
  }
  return absl::StrFormat("%6d %s", shown, kUnits[unit]);
}

}  // namespace nnvm
