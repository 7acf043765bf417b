// NNVM_ARG: a builder-style option of an options struct (libtorch's
// TORCH_ARG). `NNVM_ARG(int64_t, stride) = 1;` declares `opts.stride(2)`,
// which sets and returns the options for chaining, and `opts.stride()`, which reads.
#pragma once

#define NNVM_ARG(T, name)                                  \
 public:                                                   \
  auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                            \
    return *this;                                          \
  }                                                        \
  const T& name() const noexcept { return this->name##_; } \
  T& name() noexcept { return this->name##_; }             \
                                                           \
 private:                                                  \
  T name##_
