// Ember's public C++ API in one include: tensors and their ops, autograd, nn
// (modules, layers, optimizers, amp, data, safetensors), DataParallel and, when
// built with MPI, DistributedDataParallel, and int8 quantization. (The C API is
// its own header, ember_c.h.)
// Everything it includes is installed, and every symbol it declares is exported
// from libember.so (kernels/base/export.h); nothing else is.
#pragma once

#include "ember_config.h"
#include "kernels/base/parallel.h"
#include "tensor/build_info.h"
#include "tensor/cpu_allocator.h"
#include "tensor/cuda.h"
#include "tensor/emu.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "nn/nn.h"
#include "nn/data/dataloader.h"
#include "nn/data/fashion_mnist.h"
#include "nn/data/file_reader.h"
#include "nn/data/idx.h"
#include "nn/data/sampler.h"
#include "nn/serialize/atomic_file.h"
#include "nn/serialize/npy.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "nn/serialize/summary_writer.h"
#include "dist/dist.h"
#include "quant/quant.h"
#if EMBER_HAVE_ONNX
#include "onnx/onnx.h"
#endif
