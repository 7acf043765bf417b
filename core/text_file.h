// Small text helpers the rooms share: writing a report file, showing a byte
// count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nnvm {

// Writes `text` to `path`, replacing it; an nnvm::Error naming `op` and the
// path when it cannot be opened or written.
void write_text_file(const std::string& path, std::string_view text, std::string_view op);

// A byte count in the largest unit that keeps it at 768 units or more:
// "   512 KiB" (memory_summary's cells, the memory timeline's axis).
std::string format_bytes(int64_t bytes);

}  // namespace nnvm
