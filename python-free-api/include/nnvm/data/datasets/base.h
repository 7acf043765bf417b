// The dataset interfaces of libtorch's torch::data::datasets. A
// BatchDataset answers a batch request (indices) with a batch; a Dataset
// answers one index with one example and builds a batch as a vector of them.
// Loaders (make_data_loader) ask for batches; .map(transform) wraps a dataset
// in a MapDataset whose batches the transform rewrites (Stack collates them).
//
//   class Squares : public nnvm::data::datasets::Dataset<Squares> {
//    public:
//     nnvm::data::Example<> get(size_t i) override { ... }
//     nnvm::optional<size_t> size() const override { return 100; }
//   };
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "nnvm/data/example.h"
#include "nnvm/data/types.h"

namespace nnvm::data::datasets {

template <class Source, class AppliedTransform> class MapDataset;

template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  virtual ~BatchDataset() = default;

  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples; empty for a dataset that cannot tell (a sampler needs it).
  virtual std::optional<size_t> size() const = 0;

  // A copy (or, on an rvalue, this dataset moved) whose batches go through `transform`.
  template <class Transform> MapDataset<Self, Transform> map(Transform transform) & {
    return MapDataset<Self, Transform>(static_cast<Self&>(*this), std::move(transform));
  }
  template <class Transform> MapDataset<Self, Transform> map(Transform transform) && {
    return MapDataset<Self, Transform>(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  // One get() per index, in order.
  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

}  // namespace nnvm::data::datasets

#include "nnvm/data/datasets/map.h"
