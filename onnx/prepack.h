// Laying constant weights out once, at load, for the kernels that read them in
// another layout (onnx/prepack.cpp): what ONNX Runtime calls pre-packing.
#pragma once

#include "onnx/plan.h"

namespace ember::onnx {

// Gives each 2-D Conv step (alone or fused with its Relu, not with a pool) whose
// weight is a float32 constant on the CPU, with strides of 1, the weight packed for
// the channel-lane kernels (conv2d_pack_weight) as one more constant input after X,
// W and B (B absent where the node has none); steps sharing a weight share its
// packed copy. A weight no other step reads, and no graph output, becomes a meta
// tensor of its shape (conv2d_packed takes its values from the packed copy). Run
// after fuse_steps and after the constants are on the model's device. Returns the
// number of weights packed.
size_t prepack_weights(Plan& plan);

}  // namespace ember::onnx
