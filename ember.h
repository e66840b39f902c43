// Ember's public header: include this one file to use the library.
#pragma once

#include "ember_config.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "kernels/base/parallel.h"
#include "tensor/cpu_allocator.h"
#include "tensor/cuda.h"
#include "tensor/emu.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"
