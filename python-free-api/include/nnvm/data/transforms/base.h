// Transform interfaces (libtorch's torch::data::transforms): a BatchTransform
// rewrites a whole batch; a Transform rewrites one example at a time and so
// maps a vector of examples element by element. MapDataset calls apply_batch.
#pragma once

#include <utility>
#include <vector>

namespace nnvm::data::transforms {

template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;

  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;

  virtual Output apply(Input input) = 0;

  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (Input& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

}  // namespace nnvm::data::transforms
