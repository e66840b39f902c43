// What each op's backward rule needs besides saved tensors: one small struct per op
// family. The op's front-end fills it when it records the node (node->attrs = ...),
// and its rule in autograd/derivatives.cpp reads it by field name
// (n.attrs_as<Conv2dAttrs>().groups), so forward and backward never agree on a
// position in a list. Elementwise ops have no attributes.
#pragma once

#include "kernels/base/export.h"

#include <array>
#include <cstdint>
#include <variant>
#include <vector>

EMBER_API_BEGIN

namespace ember {

// ONNX Pad's modes: a constant, the mirror image without repeating the edge
// (reflect: [1, 2, 3] padded by 2 gives [3, 2, 1, 2, 3, 2, 1]), the edge repeated
// (replicate, ONNX's "edge"). Used by pad (tensor/nn_ops.h).
enum class PadMode { Constant, Reflect, Replicate };

// sum, mean, var, norm, amax, amin
struct ReduceAttrs {
  std::vector<int64_t> dims;  // the reduced dims, ascending
  bool keepdim = false;
  int64_t correction = 0;     // var: the divisor is count - correction
  double p = 2;               // norm: the order
};

// max/min along one dim (with indices), softmax, log_softmax, cat, take
struct DimAttrs {
  int64_t dim = 0;        // wrapped to [0, ndim)
  bool keepdim = false;   // max/min only
};

struct PermuteAttrs {
  std::vector<int64_t> dims;  // output dim i is input dim dims[i]
};

struct SliceAttrs {
  int64_t dim = 0, start = 0, step = 1;
};

struct SelectAttrs {
  int64_t dim = 0, index = 0;
};

struct Conv2dAttrs {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool has_bias = false;
};

// linear and linear_relu recorded as one node (tensor/linear.cpp).
struct LinearAttrs {
  bool has_bias = false;
  bool relu = false;  // the node saved its output "y" and applies ReLU's gradient first
};

struct MaxPool2dAttrs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};

struct AvgPool2dAttrs {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0};
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

struct LayerNormAttrs {
  std::vector<int64_t> normalized_shape;
  bool has_weight = false;  // the node saved "weight"
  double eps = 1e-5;        // not needed by backward (it uses the saved 1/std); onnx::save writes it
};

struct PadAttrs {
  std::vector<std::array<int64_t, 2>> pads;  // (begin, end) per dim
  PadMode mode = PadMode::Constant;
  double value = 0;  // the fill in constant mode; not needed by backward, onnx::save writes it
};

// cross_entropy, nll_loss
struct LossAttrs {
  int64_t ignore_index = -100;
};

using OpAttrs = std::variant<std::monostate, ReduceAttrs, DimAttrs, PermuteAttrs, SliceAttrs, SelectAttrs,
                             Conv2dAttrs, LinearAttrs, MaxPool2dAttrs, AvgPool2dAttrs, LayerNormAttrs, PadAttrs,
                             LossAttrs>;

}  // namespace ember

EMBER_API_END
