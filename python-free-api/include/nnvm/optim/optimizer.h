// optim::Optimizer, the base of SGD, Adam, AdamW and RMSprop, following
// libtorch's C++ frontend:
//
//   nnvm::optim::SGD opt(model->parameters(), nnvm::optim::SGDOptions(0.1).momentum(0.9));
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Parameters are split into groups, each with its own options (learning rate
// and the rest); `param_groups()[i].options().set_lr(x)` changes a group's
// rate, which is what the LR schedulers do. step() updates the parameters in
// place under NoGradGuard; per-parameter state (momentum buffers, moments) is
// keyed by the parameter's identity, so every handle to it sees the update.
// save() and load() write and read the state and the groups' options as a
// checkpoint (src/optim/serialize.cpp; the format is in docs/NN.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nnvm/arg.h"
#include "nnvm/core/tensor.h"

namespace nnvm::optim {

// Checkpoints see options and state through visitors: each type lists its
// fields by name in one function, which serves both saving and loading.
class OptionsVisitor {
 public:
  virtual ~OptionsVisitor() = default;
  virtual void field(std::string_view name, double& value) = 0;
  virtual void field(std::string_view name, bool& value) = 0;
};

class StateVisitor {
 public:
  virtual ~StateVisitor() = default;
  virtual void field(std::string_view name, int64_t& count) = 0;
  // A tensor of the parameter's shape and dtype, or undefined (not made yet).
  virtual void field(std::string_view name, Tensor& tensor) = 0;
};

class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  virtual void visit(OptionsVisitor& visitor) = 0;
};

// Implements clone() for an options type (libtorch's OptimizerCloneableOptions).
template <class Derived> class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT: implicit, like libtorch
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

// Per-parameter state of one optimizer (a momentum buffer, Adam's moments).
struct OptimizerParamState {
  virtual ~OptimizerParamState() = default;
  virtual void visit(StateVisitor& visitor) = 0;
};

class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;

  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient. With a closure, it is
  // called first (with grad mode on) and its loss returned.
  Tensor step(const LossClosure& closure = nullptr);
  // Resets every parameter's gradient (to undefined, as libtorch does by default; to zeros otherwise).
  void zero_grad(bool set_to_none = true);
  // A group without options takes a copy of the defaults. Throws nnvm::Error when
  // a parameter is already in a group, is not a floating leaf, or does not require grad.
  void add_param_group(const OptimizerParamGroup& group);

  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  // Every parameter of every group.
  std::vector<Tensor> parameters() const;
  size_t size() const;  // number of parameters
  OptimizerOptions& defaults() { return *defaults_; }

  // The optimizer's kind as checkpoints name it ("Adam").
  virtual std::string_view name() const = 0;
  // Writes the per-parameter state and every group's options to `path`.
  void save(const std::string& path) const;
  // Reads a checkpoint of save(). Throws nnvm::Error, before changing anything,
  // when it is of another kind, has other group or parameter counts, or holds
  // state that does not fit a parameter.
  void load(const std::string& path);

 protected:
  // Updates the parameters of one group; runs with grad mode off.
  virtual void update(OptimizerParamGroup& group) = 0;
  // The state of `param`, default-constructed on first use.
  template <class State> State& state_of(const Tensor& param) {
    std::unique_ptr<OptimizerParamState>& slot = state_[param.impl()];
    if (!slot) slot = std::make_unique<State>();
    return static_cast<State&>(*slot);
  }
  // A fresh state of the kind state_of makes, for load() to fill.
  virtual std::unique_ptr<OptimizerParamState> make_state() const = 0;

 private:
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
  std::unordered_map<const TensorImpl*, std::unique_ptr<OptimizerParamState>> state_;
};

}  // namespace nnvm::optim
