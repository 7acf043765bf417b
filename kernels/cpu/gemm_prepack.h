// Weights kept packed between products: ONNX Runtime's prepacked
// initializers for nnvm's GEMM. A loaded model's matrices are the B of every
// call's products; packing them into the GEMM's micro-panels each call read
// the whole of them from memory once more per call, and was a fifth of a
// BERT-sized encoder layer's time at batch 1 (docs/BENCHMARKS.md). A storage
// registered here has each B that starts at its first byte packed once, for
// the whole of k, per (layout, version, rewrites), and the GEMM reads those
// panels until the storage's version moves (an in-place op, an optimizer
// step), a flush rewrites it (a recorded in-place result reaching memory:
// Storage::rewrites), or the storage dies; while a flush is rewriting it,
// each product packs it anew. Writes that do not go through an op (through
// data_ptr() or from_blob memory) are not seen: only registered storages,
// which the program owns, are kept.
#pragma once

#include <cstdint>
#include <memory>

#include "nnvm/core/storage.h"

namespace nnvm::cpu {

// The storage's B operands are kept packed from now on (a float32 matrix
// the program treats as a constant: Model registers its initializers).
void gemm_keep_packed(const std::shared_ptr<Storage>& storage);

// B (k × n, strides rs and cs in floats) as whole-k micro-panels of
// 2 · vector_bytes / 4 columns, panel j at j · k · NR floats, each zero-padded
// to NR columns (gemm_pack_b's layout with kc = k): packed now if its storage
// is registered and its version or layout is new, kept while the result is
// held. Null where `b` is not the start of a registered storage.
std::shared_ptr<const float> gemm_packed_b(const float* b, int64_t rs, int64_t cs, int64_t k, int64_t n,
                                           int vector_bytes);

// How many packed B operands the registry holds (tests).
int64_t gemm_packed_count();

}  // namespace nnvm::cpu
