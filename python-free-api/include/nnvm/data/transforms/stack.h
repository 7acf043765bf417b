// Collation: one batched example from a vector of examples (libtorch's
// transforms::Stack). The last .map() of a pipeline, so the loader yields
// Example<> batches of [B, ...] tensors instead of vectors of examples.
#pragma once

#include <vector>

#include "nnvm/data/example.h"
#include "nnvm/data/transforms/base.h"

namespace nnvm::data::transforms {

template <class BatchType, class RawBatchType = std::vector<BatchType>>
using Collation = BatchTransform<RawBatchType, BatchType>;

template <class T = Example<>> struct Stack;

// Stacks the datas and the targets along a new dim 0. Throws nnvm::Error for
// an empty batch or examples whose data (or target) shapes differ, naming
// both shapes and the index of the first example that differs.
template <> struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override;
};

template <> struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override;
};

}  // namespace nnvm::data::transforms
