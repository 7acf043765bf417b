// The whole public API of nnvm: #include <nnvm/nnvm.h>.
#pragma once

#include "nnvm/core/allocator.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/device.h"
#include "nnvm/core/dtype.h"
#include "nnvm/core/error.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/generator.h"
#include "nnvm/core/op.h"
#include "nnvm/core/scalar.h"
#include "nnvm/core/shape.h"
#include "nnvm/core/tensor.h"
#include "nnvm/core/thread_pool.h"
#include "nnvm/data/dataloader.h"
#include "nnvm/data/example.h"
#include "nnvm/data/fashion_mnist.h"
#include "nnvm/data/idx.h"
