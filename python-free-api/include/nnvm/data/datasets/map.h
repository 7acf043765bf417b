// A dataset whose batches pass through a batch transform on the way out
// (libtorch's datasets::MapDataset): dataset.map(Normalize<>(m, s)).map(Stack<>()).
// The transform's apply_batch takes the source's batch type, so per-example
// transforms and collations chain in the order they are mapped.
#pragma once

#include <optional>
#include <utility>

#include "nnvm/data/datasets/base.h"

namespace nnvm::data::datasets {

template <class Source, class AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<Source, AppliedTransform>,
                                       decltype(std::declval<AppliedTransform&>().apply_batch(
                                           std::declval<typename Source::BatchType>())),
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = decltype(std::declval<AppliedTransform&>().apply_batch(
      std::declval<typename Source::BatchType>()));

  MapDataset(Source dataset, AppliedTransform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }

  const Source& dataset() const { return dataset_; }
  const AppliedTransform& transform() const { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

}  // namespace nnvm::data::datasets
