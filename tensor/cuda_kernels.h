// The CUDA kernel launchers the op front-ends call, in CUDA builds only (each
// kernels/cuda/<family>.h mirrors kernels/cpu/<family>.h with a stream argument).
#pragma once

#include "tensor/backend.h"

#if EMBER_HAVE_CUDA
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/optim.h"
#include "kernels/cuda/pad.h"
#include "kernels/cuda/pool2d.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/take.h"
#endif
