// The window of a Conv-like or pool node (ops_nn.cpp, ops_quantized.cpp): its
// attributes as read at load, and the geometry resolved for one input, since
// auto_pad's padding depends on the input's size.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "onnx/node_context.h"

namespace ember::onnx {

// Over `n` spatial dims: padding before and after each, which may differ.
struct Window {
  Shape kernel, stride, dilation, pad_begin, pad_end;
  bool symmetric() const { return pad_begin == pad_end; }
};

struct WindowAttrs {
  std::string auto_pad;
  Shape kernel, stride, dilation, pads;
  bool ceil_mode = false;
};

// auto_pad, kernel_shape, strides, dilations, pads and ceil_mode of the node.
WindowAttrs window_attrs(const NodeContext& ctx);

// A 2-D window known whole at load: kernel_shape given, padding that does not
// depend on the input (no SAME_* auto_pad) and is the same before and after each
// dim, positive strides and dilations. Conv's steps then skip resolve_window on
// every call (a few allocations each, which a batch-1 model notices).
struct FixedWindow2d {
  std::array<int64_t, 2> kernel, stride, pad, dilation;
};
std::optional<FixedWindow2d> fixed_window_2d(const WindowAttrs& a);
// The geometry for input x [N, C, spatial...] and a window of `kernel`'s size;
// errors start with `where`.
Window resolve_window(const WindowAttrs& a, const Shape& kernel, const Tensor& x, const std::string& where);

}  // namespace ember::onnx
