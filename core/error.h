// nnvm::Error: the one exception type for user mistakes (docs/DESIGN.md §3.12).
// Every message names the op, the shapes involved and what was expected, so a
// user can fix the call without reading nnvm's source. Internal invariants use
// NNVM_DCHECK, which aborts in debug builds only.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace nnvm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
// Streams every piece (numbers, strings, dtypes, devices) into one string.
template <class... Pieces> std::string concat(const Pieces&... pieces) {
  std::ostringstream os;
  (os << ... << pieces);
  return os.str();
}
}  // namespace detail

// Throws nnvm::Error("<op>: <message pieces...>") when `cond` is false.
// NNVM_CHECK(cond, op, pieces...) throws "op: pieces..."; as libtorch's
// TORCH_CHECK, NNVM_CHECK(cond, message) throws the message alone and
// NNVM_CHECK(cond) says which condition failed.
#define NNVM_CHECK(cond, ...)                                                                   \
  do {                                                                                          \
    if (!(cond)) [[unlikely]]                                                                   \
      throw ::nnvm::Error(::nnvm::detail::check_message(#cond __VA_OPT__(, ) __VA_ARGS__));     \
  } while (0)
// libtorch's AT_ASSERT / TORCH_INTERNAL_ASSERT, ported by rote: checks that hold in every build.
#define NNVM_ASSERT(cond, ...) NNVM_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)
#define NNVM_INTERNAL_ASSERT(cond, ...) NNVM_CHECK(cond __VA_OPT__(, ) __VA_ARGS__)

namespace detail {
inline std::string check_message(const char* cond) {
  return concat("Expected ", cond, " to be true, but got false");
}
template <class Message> std::string check_message(const char*, const Message& message) { return concat(message); }
template <class Op, class... Pieces>
std::string check_message(const char*, const Op& op, const Pieces&... pieces) {
  return concat(op, ": ", pieces...);
}
}  // namespace detail

#ifdef NDEBUG
#define NNVM_DCHECK(cond) ((void)0)
#else
#define NNVM_DCHECK(cond) \
  ((cond) ? (void)0 : ::nnvm::detail::dcheck_failed(#cond, __FILE__, __LINE__))
#endif

namespace detail {
[[noreturn]] void dcheck_failed(const char* cond, const char* file, int line);
}

}  // namespace nnvm
