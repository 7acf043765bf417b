#include "nnvm/trace/replay.h"

namespace nnvm::trace {

namespace {
// Read by every JIT run: a plain pointer, the TLS segment's smallest kind
// of thread-local (core/hot_tls.h keeps that segment small).
thread_local ReplayCapture* t_capture = nullptr;
}  // namespace

ReplayCapture* replay_capture() { return t_capture; }

CaptureScope::CaptureScope(ReplayCapture* capture) : previous_(t_capture) { t_capture = capture; }

CaptureScope::~CaptureScope() { t_capture = previous_; }

}  // namespace nnvm::trace
