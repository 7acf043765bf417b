// AnyModule: libtorch's type-erased module, for options that take "some
// module" (TransformerEncoderOptions::norm). It holds any module with
// `Tensor forward(const Tensor&)` and calls it without knowing its type;
// libtorch's AnyModule also takes other forward signatures, which no option
// of nnvm's needs.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "nnvm/nn/module.h"

namespace nnvm::nn {

class AnyModule {
 public:
  AnyModule() = default;  // empty: is_empty() is true
  template <class M>
    requires std::is_base_of_v<Module, M>
  explicit AnyModule(std::shared_ptr<M> module) : module_(module) {
    NNVM_CHECK(module_ != nullptr, "AnyModule", "given a null module");
    M* raw = module.get();
    forward_ = [raw](const Tensor& x) { return raw->forward(x); };
    // A deep copy rebuilds the module from its options and copies its state,
    // as TransformerEncoder copies its layer; a module without options cannot
    // be cloned (as libtorch's needs Cloneable).
    if constexpr (requires(M& m) { std::make_shared<M>(m.options); }) {
      clone_ = [raw] {
        auto copy = std::make_shared<M>(raw->options);
        copy->load_state_dict(raw->state_dict());
        copy->train(raw->is_training());
        return AnyModule(std::move(copy));
      };
    }
  }
  template <class Holder>
    requires requires { typename Holder::ContainedType; }
  AnyModule(const Holder& holder) : AnyModule(holder.ptr()) {}  // NOLINT: implicit, like libtorch
  template <class M>
    requires std::is_base_of_v<Module, std::decay_t<M>>
  explicit AnyModule(M&& module) : AnyModule(std::make_shared<std::decay_t<M>>(std::forward<M>(module))) {}

  // libtorch's forward returns an AnyValue read with forward<Tensor>(x); here
  // the one result type is Tensor, so forward(x) and forward<Tensor>(x) agree.
  template <class Result = Tensor> Result forward(const Tensor& x) const {
    static_assert(std::is_same_v<Result, Tensor>, "nnvm's AnyModule holds modules that return a Tensor");
    NNVM_CHECK(forward_ != nullptr, "AnyModule", "calling forward on an empty AnyModule");
    return forward_(x);
  }
  // A module of its own with the same parameters and buffers; throws
  // nnvm::Error when the module has no `options` to rebuild it from.
  AnyModule clone() const {
    NNVM_CHECK(module_ != nullptr, "AnyModule", "cloning an empty AnyModule");
    NNVM_CHECK(clone_ != nullptr, "AnyModule", "clone of a ", module_->name(),
               ": expected a module with an `options` member to rebuild it from");
    return clone_();
  }

  const std::shared_ptr<Module>& ptr() const { return module_; }
  // The module as its concrete type; throws nnvm::Error when it is another type.
  template <class T> auto& get() const {
    NNVM_CHECK(module_ != nullptr, "AnyModule", "get on an empty AnyModule");
    auto* m = module_->template as<T>();
    NNVM_CHECK(m != nullptr, "AnyModule", "holds a ", module_->name(), ", not the requested type");
    return *m;
  }
  bool is_empty() const { return module_ == nullptr; }

 private:
  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
  std::function<AnyModule()> clone_;
};

}  // namespace nnvm::nn
