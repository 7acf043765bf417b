#include "nnvm/jit/replay.h"

#include "nnvm/core/hot_tls.h"

namespace nnvm::jit {

namespace {
struct ActiveCapture {
  ReplayCapture* capture = nullptr;
};
}  // namespace

ReplayCapture* replay_capture() { return thread_state<ActiveCapture>().capture; }

CaptureScope::CaptureScope(ReplayCapture* capture) : previous_(replay_capture()) {
  thread_state<ActiveCapture>().capture = capture;
}

CaptureScope::~CaptureScope() { thread_state<ActiveCapture>().capture = previous_; }

}  // namespace nnvm::jit
