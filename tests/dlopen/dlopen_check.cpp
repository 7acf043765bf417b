// Loads the library at run time, as ctypes or a plugin host does, and calls
// a function that reads one of its thread-locals. A library whose
// thread-locals use the initial-exec model needs its whole TLS segment in
// glibc's small static reserve, and dlopen fails once that is full ("cannot
// allocate memory in static TLS block").
//
//   dlopen_check LIBRARY
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dlopen_check LIBRARY\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  // bool nnvm::is_recording(): reads the calling thread's eager-scope depth
  using IsRecording = bool (*)();
  auto is_recording = reinterpret_cast<IsRecording>(dlsym(lib, "_ZN4nnvm12is_recordingEv"));
  if (!is_recording) {
    std::fprintf(stderr, "dlsym nnvm::is_recording: %s\n", dlerror());
    return 1;
  }
  std::printf("loaded %s; is_recording() = %d\n", argv[1], int(is_recording()));
  return 0;
}
