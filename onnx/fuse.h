// Fusing chains of a plan's steps into Ember's fused ops (onnx/fuse.cpp): Conv ->
// Relu (-> MaxPool(2x2)), Gemm -> Relu and an integer product's Cast -> Mul (-> Add)
// (-> Relu), where nothing else reads the values between.
#pragma once

#include "onnx/plan.h"

namespace ember::onnx {

// Rewrites plan.steps in place, before the slots' last readers are worked out;
// plan.output_refs must be set. Returns the number of steps removed.
size_t fuse_steps(Plan& plan);

}  // namespace ember::onnx
