// Optimizer::save and Optimizer::load: an optimizer's checkpoint (docs/NN.md).
//
// Parameters are numbered across the groups in order, as in PyTorch's
// state_dict. The state of parameter i is saved as tensors "state.i.<field>"
// (counts such as Adam's step as 0-dim int64 tensors, so they keep every
// bit), group g's options as metadata "param_groups.g.<option>", printed
// with std::to_chars, whose shortest form reads back to the same double.
#include <charconv>
#include <map>
#include <set>

#include "nnvm/core/functions.h"
#include "nnvm/nn/serialize.h"
#include "nnvm/optim/optimizer.h"

namespace nnvm::optim {

namespace {

constexpr std::string_view kLoad = "Optimizer::load";

using Metadata = std::map<std::string, std::string>;

std::string state_key(size_t param, std::string_view field) { return detail::concat("state.", param, ".", field); }
std::string group_key(size_t group, std::string_view field) {
  return detail::concat("param_groups.", group, ".", field);
}

// Throws "Optimizer::load: <path>: <pieces>" unless `cond`.
template <class... Pieces> void check(bool cond, const std::string& path, const Pieces&... pieces) {
  if (!cond) [[unlikely]]
    throw Error(detail::concat(kLoad, ": ", path, ": ", pieces...));
}

class OptionsWriter : public OptionsVisitor {
 public:
  OptionsWriter(size_t group, Metadata& metadata) : group_(group), metadata_(metadata) {}
  void field(std::string_view name, double& value) override {
    char text[32];
    const std::to_chars_result printed = std::to_chars(text, text + sizeof text, value);
    metadata_[group_key(group_, name)] = std::string(text, printed.ptr);
  }
  void field(std::string_view name, bool& value) override {
    metadata_[group_key(group_, name)] = value ? "true" : "false";
  }

 private:
  size_t group_;
  Metadata& metadata_;
};

// Metadata entries read back; load() rejects the rest.
class MetadataReader {
 public:
  MetadataReader(const std::string& path, const Metadata& metadata) : path_(path), metadata_(metadata) {}
  const std::string& text(const std::string& key) {
    const auto found = metadata_.find(key);
    check(found != metadata_.end(), path_, "missing metadata entry '", key, "'");
    used_.insert(key);
    return found->second;
  }
  template <class Number> Number number(const std::string& key) {
    const std::string& s = text(key);
    Number value{};
    const std::from_chars_result parsed = std::from_chars(s.data(), s.data() + s.size(), value);
    check(parsed.ec == std::errc() && parsed.ptr == s.data() + s.size(), path_, "metadata entry '", key, "' is \"",
          s, "\", not a number");
    return value;
  }
  bool used(const std::string& key) const { return used_.contains(key); }
  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  const Metadata& metadata_;
  std::set<std::string> used_;
};

class OptionsReader : public OptionsVisitor {
 public:
  OptionsReader(size_t group, MetadataReader& metadata) : group_(group), metadata_(metadata) {}
  void field(std::string_view name, double& value) override { value = metadata_.number<double>(group_key(group_, name)); }
  void field(std::string_view name, bool& value) override {
    const std::string key = group_key(group_, name);
    const std::string& text = metadata_.text(key);
    check(text == "true" || text == "false", metadata_.path(), "metadata entry '", key, "' is \"", text,
          "\", not true or false");
    value = text == "true";
  }

 private:
  size_t group_;
  MetadataReader& metadata_;
};

class StateWriter : public StateVisitor {
 public:
  StateWriter(size_t param, std::map<std::string, Tensor>& tensors) : param_(param), tensors_(tensors) {}
  void field(std::string_view name, int64_t& count) override {
    tensors_[state_key(param_, name)] = scalar_tensor(count, kInt64);
  }
  void field(std::string_view name, Tensor& tensor) override {
    if (tensor.defined()) tensors_[state_key(param_, name)] = tensor;
  }

 private:
  size_t param_;
  std::map<std::string, Tensor>& tensors_;
};

// Fills the state of parameter `index`, checking each tensor against it.
class StateReader : public StateVisitor {
 public:
  StateReader(const std::string& path, size_t index, const Tensor& param, const std::map<std::string, Tensor>& tensors,
              std::set<std::string>& used)
      : path_(path), index_(index), param_(param), tensors_(tensors), used_(used) {}
  void field(std::string_view name, int64_t& count) override {
    const std::string key = state_key(index_, name);
    const auto found = tensors_.find(key);
    check(found != tensors_.end(), path_, "missing entry '", key, "'");
    const Tensor& t = found->second;
    check(t.dim() == 0 && t.dtype() == kInt64, path_, "'", key, "' is a ", t.dtype(), " tensor of shape ",
          shape_str(t.sizes()), "; expected a 0-dim int64 count");
    count = t.item<int64_t>();
    used_.insert(key);
  }
  void field(std::string_view name, Tensor& tensor) override {
    const std::string key = state_key(index_, name);
    const auto found = tensors_.find(key);
    if (found == tensors_.end()) return;  // not made yet when saved (AMSGrad's maximum without amsgrad)
    const Tensor& t = found->second;
    check(t.sizes() == param_.sizes() && t.dtype() == param_.dtype(), path_, "'", key, "' is a ", t.dtype(),
          " tensor of shape ", shape_str(t.sizes()), " but parameter ", index_, " is a ", param_.dtype(),
          " tensor of shape ", shape_str(param_.sizes()));
    tensor = t;
    used_.insert(key);
  }

 private:
  const std::string& path_;
  size_t index_;
  const Tensor& param_;
  const std::map<std::string, Tensor>& tensors_;
  std::set<std::string>& used_;
};

}  // namespace

void Optimizer::save(const std::string& path) const {
  std::map<std::string, Tensor> tensors;
  Metadata metadata = {{"optimizer", std::string(name())}, {"param_groups", std::to_string(param_groups_.size())}};
  size_t index = 0;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const OptimizerParamGroup& group = param_groups_[g];
    metadata[group_key(g, "params")] = std::to_string(group.params().size());
    OptionsWriter options(g, metadata);
    group.options().clone()->visit(options);  // visiting needs a mutable object: the clone is one
    for (const Tensor& p : group.params()) {
      if (const auto found = state_.find(p.impl()); found != state_.end()) {
        StateWriter state(index, tensors);
        found->second->visit(state);
      }
      ++index;
    }
  }
  nn::save_checkpoint(tensors, path, "optimizer", metadata);
}

void Optimizer::load(const std::string& path) {
  const nn::SafetensorsFile file = nn::read_checkpoint(path, "optimizer", kLoad);
  MetadataReader metadata(path, file.metadata);
  const std::string& kind = metadata.text("optimizer");
  check(kind == name(), path, "it holds the state of ", kind, " but this optimizer is ", name());
  const size_t groups = metadata.number<size_t>("param_groups");
  check(groups == param_groups_.size(), path, "it holds ", groups, " parameter groups but this optimizer has ",
        param_groups_.size());

  // Everything is read and checked before the optimizer changes.
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  decltype(state_) state;
  std::set<std::string> used;
  size_t index = 0;
  for (size_t g = 0; g < groups; ++g) {
    const OptimizerParamGroup& group = param_groups_[g];
    const size_t params = metadata.number<size_t>(group_key(g, "params"));
    check(params == group.params().size(), path, "parameter group ", g, " holds ", params,
          " parameters but this optimizer's has ", group.params().size());
    options.push_back(group.options().clone());
    OptionsReader options_reader(g, metadata);
    options.back()->visit(options_reader);
    for (const Tensor& p : group.params()) {
      const std::string prefix = state_key(index, "");
      const auto first = file.tensors.lower_bound(prefix);
      if (first != file.tensors.end() && first->first.starts_with(prefix)) {
        std::unique_ptr<OptimizerParamState> s = make_state();
        StateReader state_reader(path, index, p, file.tensors, used);
        s->visit(state_reader);
        state[p.impl()] = std::move(s);
      }
      ++index;
    }
  }
  for (const auto& [key, t] : file.tensors)
    check(used.contains(key), path, "unexpected entry '", key, "' of shape ", shape_str(t.sizes()), " (", name(),
          " with ", index, " parameters has no such state)");
  for (const auto& [key, value] : file.metadata)
    check(!key.starts_with("param_groups.") || metadata.used(key), path, "unexpected metadata entry '", key,
          "' (", name(), " has no such option)");

  for (size_t g = 0; g < groups; ++g) param_groups_[g].set_options(std::move(options[g]));
  state_ = std::move(state);
}

}  // namespace nnvm::optim
