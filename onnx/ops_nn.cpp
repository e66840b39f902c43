// ONNX's layer ops: Conv and ConvTranspose (1-D, 2-D and 3-D), MaxPool and
// AveragePool (1-D to 3-D), the global pools, BatchNormalization (inference),
// InstanceNormalization, LayerNormalization, Gemm, MatMul, Softmax, LogSoftmax
// and Pad (constant, reflect, edge). 2-D is Ember's conv2d/pool2d directly; 1-D runs as 2-D with
// a height of 1; 3-D runs as a sum (conv) or reduction (pool) of 2-D slices over
// depth, which is exact but not fast. Padding that Ember's kernels cannot take
// (asymmetric, or wider than half the window) is applied to the input first.
#include "onnx/op_families.h"
#include "onnx/window.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/base/error.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::onnx {

WindowAttrs window_attrs(const NodeContext& ctx) {
  WindowAttrs w;
  w.auto_pad = ctx.get_string("auto_pad", "NOTSET");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" && w.auto_pad != "VALID")
    ctx.invalid("auto_pad '" + w.auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  w.kernel = ctx.get_ints("kernel_shape");
  w.stride = ctx.get_ints("strides");
  w.dilation = ctx.get_ints("dilations");
  w.pads = ctx.get_ints("pads");
  w.ceil_mode = ctx.get_int("ceil_mode", 0) != 0;
  return w;
}

std::optional<FixedWindow2d> fixed_window_2d(const WindowAttrs& a) {
  if (a.kernel.size() != 2 || (a.auto_pad != "NOTSET" && a.auto_pad != "VALID")) return std::nullopt;
  if ((!a.stride.empty() && a.stride.size() != 2) || (!a.dilation.empty() && a.dilation.size() != 2)) return std::nullopt;
  FixedWindow2d w{};
  for (size_t i = 0; i < 2; ++i) {
    w.kernel[i] = a.kernel[i];
    w.stride[i] = a.stride.empty() ? 1 : a.stride[i];
    w.dilation[i] = a.dilation.empty() ? 1 : a.dilation[i];
    w.pad[i] = 0;
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      if (a.pads.size() != 4 || a.pads[i] != a.pads[i + 2]) return std::nullopt;
      w.pad[i] = a.pads[i];
    }
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.dilation[i] < 1 || w.pad[i] < 0) return std::nullopt;
  }
  return w;
}

Window resolve_window(const WindowAttrs& a, const Shape& kernel, const Tensor& x, const std::string& where) {
  size_t n = kernel.size();
  Window w;
  w.kernel = kernel;
  w.stride = a.stride.empty() ? Shape(n, 1) : a.stride;
  w.dilation = a.dilation.empty() ? Shape(n, 1) : a.dilation;
  if (w.stride.size() != n || w.dilation.size() != n || (!a.pads.empty() && a.pads.size() != 2 * n))
    throw ShapeError(where + ": strides, dilations and pads do not match a " + std::to_string(n) + "-D window");
  if (static_cast<size_t>(x.dim()) != n + 2)
    throw ShapeError(where + ": expected a " + std::to_string(n + 2) + "-D input but got " + shape_str(x.shape()));
  w.pad_begin.assign(n, 0);
  w.pad_end.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (w.stride[i] < 1 || w.dilation[i] < 1 || w.kernel[i] < 1)
      throw ShapeError(where + ": kernel, strides and dilations must be positive");
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      const char* op = where.c_str();
      int64_t in = x.size(static_cast<int64_t>(i) + 2);
      int64_t out = size_add(in, w.stride[i] - 1, op) / w.stride[i];
      int64_t reach = size_add(size_mul(out - 1, w.stride[i], op), size_mul(w.kernel[i] - 1, w.dilation[i], op), op);
      int64_t total = std::max<int64_t>(size_sub(size_add(reach, 1, op), in, op), 0);
      int64_t small = total / 2;
      w.pad_begin[i] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      w.pad_end[i] = total - w.pad_begin[i];
    } else if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      w.pad_begin[i] = a.pads[i];
      w.pad_end[i] = a.pads[i + n];
      if (w.pad_begin[i] < 0 || w.pad_end[i] < 0) throw ShapeError(where + ": pads must not be negative");
    }
  }
  return w;
}

namespace {

std::vector<Tensor> one(Tensor t) { return std::vector<Tensor>{std::move(t)}; }

// Pads every dim of x by begins[d] before and ends[d] after with `value`;
// negative amounts crop (ember::pad in constant mode).
Tensor pad_constant(const Tensor& x, const Shape& begins, const Shape& ends, double value) {
  std::vector<Pair> pairs;
  for (int64_t d = 0; d < x.dim(); ++d) pairs.push_back({begins[d], ends[d]});
  return pad(x, pairs, PadMode::Constant, value);
}

// The part of y [N, C, ...] seen through an output window: output position o of
// spatial dim i is y's position o + start[i]; positions outside y are zeros.
Tensor window_of(const Tensor& y, const Shape& start, const Shape& len) {
  bool whole = true;
  for (size_t i = 0; i < len.size(); ++i) whole = whole && start[i] == 0 && len[i] == y.size(static_cast<int64_t>(i) + 2);
  if (whole) return y;
  Shape out_shape{y.size(0), y.size(1)};
  out_shape.insert(out_shape.end(), len.begin(), len.end());
  Tensor out = zeros(out_shape, TensorOptions(y.dtype(), y.device()));
  Tensor dst = out, src = y;
  for (size_t i = 0; i < len.size(); ++i) {
    int64_t d = static_cast<int64_t>(i) + 2;
    int64_t lo = std::max<int64_t>(start[i], 0), hi = std::min<int64_t>(start[i] + len[i], y.size(d));
    if (hi <= lo) return out;
    src = src.narrow(d, lo, hi - lo);
    dst = dst.narrow(d, lo - start[i], hi - lo);
  }
  dst.copy_(src);
  return out;
}

// Moves the window's padding into the input (pads of `value`), leaving none.
Tensor pad_input(const Tensor& x, Window& w, double value) {
  size_t n = w.kernel.size();
  Shape b(2, 0), e(2, 0);
  b.insert(b.end(), w.pad_begin.begin(), w.pad_begin.end());
  e.insert(e.end(), w.pad_end.begin(), w.pad_end.end());
  w.pad_begin.assign(n, 0);
  w.pad_end.assign(n, 0);
  return pad_constant(x, b, e, value);
}

Pair pair(const Shape& s) { return {s[0], s[1]}; }

// 1-D windows become 2-D ones of height 1: the tensor gains dim 2 of size 1.
void lift_1d(Window& w) {
  w.kernel.insert(w.kernel.begin(), 1);
  w.stride.insert(w.stride.begin(), 1);
  w.dilation.insert(w.dilation.begin(), 1);
  w.pad_begin.insert(w.pad_begin.begin(), 0);
  w.pad_end.insert(w.pad_end.begin(), 0);
}

// ---- Conv ----

// 2-D convolution with padding already symmetric; packed: the weight as
// onnx/prepack.cpp laid it out at load, or undefined.
Tensor conv2d_window(const Tensor& x, const Tensor& w, const Tensor& b, const Window& win, int64_t groups,
                     const Tensor& packed = Tensor()) {
  return conv2d_packed(x, w, packed, b, pair(win.stride), pair(win.pad_begin), pair(win.dilation), groups);
}

}  // namespace

OpFn build_conv(const NodeContext& ctx) {
  WindowAttrs attrs = window_attrs(ctx);
  int64_t groups = ctx.get_int("group", 1);
  std::string where = ctx.where();
  const std::optional<FixedWindow2d> fixed = fixed_window_2d(attrs);
  return [=](const std::vector<Tensor>& in) {
    Tensor x = in[0], w = in[1];
    Tensor b = in.size() > 2 ? in[2] : Tensor();
    const Tensor packed = in.size() > 3 ? in[3] : Tensor();  // onnx/prepack.cpp: 2-D only
    if (fixed && x.dim() == 4 && w.dim() == 4 && w.size(2) == fixed->kernel[0] && w.size(3) == fixed->kernel[1])
      return one(conv2d_packed(x, w, packed, b, fixed->stride, fixed->pad, fixed->dilation, groups));
    int64_t n = w.dim() - 2;
    if (n < 1 || n > 3) throw NotImplementedError(where + ": a " + std::to_string(n) + "-D convolution is not supported");
    Shape kernel(w.shape().begin() + 2, w.shape().end());
    if (!attrs.kernel.empty() && attrs.kernel != kernel)
      throw ShapeError(where + ": kernel_shape " + shape_str(attrs.kernel) + " does not match the weight's " +
                       shape_str(kernel));
    Window win = resolve_window(attrs, kernel, x, where);
    if (!win.symmetric()) x = pad_input(x, win, 0.0);
    if (n == 1) {
      lift_1d(win);
      return one(conv2d_window(x.unsqueeze(2), w.unsqueeze(2), b, win, groups).squeeze(2));
    }
    if (n == 2) return one(conv2d_window(x, w, b, win, groups, packed));
    // 3-D: output depth d sums 2-D convolutions of the input planes its window
    // covers with the matching kernel planes.
    if (win.pad_begin[0] > 0) {
      Shape pb(5, 0), pe(5, 0);
      pb[2] = win.pad_begin[0];
      pe[2] = win.pad_end[0];
      x = pad_constant(x, pb, pe, 0.0);
    }
    Window w2;
    w2.kernel = {kernel[1], kernel[2]};
    w2.stride = {win.stride[1], win.stride[2]};
    w2.dilation = {win.dilation[1], win.dilation[2]};
    w2.pad_begin = {win.pad_begin[1], win.pad_begin[2]};
    w2.pad_end = w2.pad_begin;
    int64_t span = size_add(size_mul(kernel[0] - 1, win.dilation[0], where.c_str()), 1, where.c_str());
    int64_t d_out = (x.size(2) - span) / win.stride[0] + 1;
    if (d_out < 1) throw ShapeError(where + ": the input is smaller than the kernel");
    std::vector<Tensor> planes;
    for (int64_t od = 0; od < d_out; ++od) {
      Tensor acc;
      for (int64_t k = 0; k < kernel[0]; ++k) {
        Tensor xs = x.select(2, od * win.stride[0] + k * win.dilation[0]);
        Tensor part = conv2d_window(xs, w.select(2, k), k == 0 ? b : Tensor(), w2, groups);
        acc = acc.defined() ? add(acc, part) : part;
      }
      planes.push_back(acc);
    }
    return one(stack(planes, 2));
  };
}

namespace {

OpFn build_conv_transpose(const NodeContext& ctx) {
  WindowAttrs attrs = window_attrs(ctx);
  int64_t groups = ctx.get_int("group", 1);
  Shape output_padding = ctx.get_ints("output_padding"), output_shape = ctx.get_ints("output_shape");
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    Tensor x = in[0], w = in[1];
    Tensor b = in.size() > 2 ? in[2] : Tensor();
    int64_t n = w.dim() - 2;
    if (n < 1 || n > 2)
      throw NotImplementedError(where + ": a " + std::to_string(n) + "-D transposed convolution is not supported");
    if (x.dim() != n + 2) throw ShapeError(where + ": expected a " + std::to_string(n + 2) + "-D input");
    Shape kernel(w.shape().begin() + 2, w.shape().end());
    Shape stride = attrs.stride.empty() ? Shape(n, 1) : attrs.stride;
    Shape dil = attrs.dilation.empty() ? Shape(n, 1) : attrs.dilation;
    Shape opad = output_padding.empty() ? Shape(n, 0) : output_padding;
    if (static_cast<int64_t>(stride.size()) != n || static_cast<int64_t>(dil.size()) != n ||
        static_cast<int64_t>(opad.size()) != n)
      throw ShapeError(where + ": strides, dilations and output_padding do not match the kernel");
    if (!output_shape.empty() && static_cast<int64_t>(output_shape.size()) < n)
      throw ShapeError(where + ": output_shape has fewer values than the kernel has dims");
    if (!attrs.pads.empty() && static_cast<int64_t>(attrs.pads.size()) != 2 * n)
      throw ShapeError(where + ": pads do not match a " + std::to_string(n) + "-D kernel");
    // The kernel (conv2d's input gradient) trusts its sizes: check them here.
    if (groups < 1) throw ShapeError(where + ": group must be positive");
    if (w.size(0) != x.size(1) || w.size(0) % groups != 0)
      throw ShapeError(where + ": a weight of shape " + shape_str(w.shape()) + " with group " + std::to_string(groups) +
                       " does not fit an input of " + std::to_string(x.size(1)) + " channels");
    if (x.dtype() != w.dtype())
      throw DTypeError(where + ": the input is " + dtype_name(x.dtype()) + " but the weight is " +
                       dtype_name(w.dtype()));
    for (int64_t i = 0; i < n; ++i)
      if (stride[i] < 1 || dil[i] < 1 || opad[i] < 0 || kernel[i] < 1 ||
          (!attrs.pads.empty() && (attrs.pads[i] < 0 || attrs.pads[i + n] < 0)))
        throw ShapeError(where + ": strides, dilations and kernel must be positive, pads and output_padding not negative");
    // `reach`: the positions the kernel writes. output_padding adds positions
    // beyond them (zeros); the pads then crop (or, negative, extend with zeros)
    // each end. ONNX splits an odd total with floor division, the larger part at
    // the start unless auto_pad is SAME_UPPER.
    auto floor_half = [](int64_t t) { return t >> 1; };  // C++20: an arithmetic shift, floor(t / 2)
    const char* op = where.c_str();
    Shape reach(static_cast<size_t>(n)), pb(static_cast<size_t>(n), 0), pe(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t in_size = x.size(i + 2);
      const int64_t span = size_add(size_mul(kernel[i] - 1, dil[i], op), 1, op);
      reach[i] = size_add(size_mul(in_size - 1, stride[i], op), span, op);
      int64_t full = size_add(reach[i], opad[i], op);
      bool split = true;
      int64_t total = 0;
      if (!output_shape.empty()) total = size_sub(full, output_shape[output_shape.size() - n + i], op);
      else if (attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER")
        total = size_sub(full, size_mul(in_size, stride[i], op), op);
      else split = false;
      if (split) {
        int64_t half = floor_half(total);
        pb[i] = attrs.auto_pad == "SAME_UPPER" ? half : total - half;
        pe[i] = total - pb[i];
      } else if (!attrs.pads.empty()) {
        pb[i] = attrs.pads[i];
        pe[i] = attrs.pads[i + n];
      }
      if (size_sub(size_sub(full, pb[i], op), pe[i], op) < 1) throw ShapeError(where + ": the pads leave no output");
    }
    Tensor xx = x, ww = w;
    Shape rs = reach, st = stride, dl = dil;
    if (n == 1) {
      xx = x.unsqueeze(2);
      ww = w.unsqueeze(2);
      rs.insert(rs.begin(), 1);
      st.insert(st.begin(), 1);
      dl.insert(dl.begin(), 1);
    }
    Shape x_shape{x.size(0), size_mul(w.size(1), groups, op), rs[0], rs[1]};
    Tensor y = conv2d_backward_input(xx, ww, x_shape, pair(st), {0, 0}, pair(dl), groups);
    if (n == 1) y = y.squeeze(2);
    Shape out_len(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out_len[i] = reach[i] + opad[i] - pb[i] - pe[i];
    y = window_of(y, pb, out_len);
    if (b.defined()) {
      Shape bs(static_cast<size_t>(n + 1), 1);
      bs[0] = b.size(0);
      y = add(y, b.reshape(bs));
    }
    return one(y);
  };
}

// ---- pools ----

// Reduces planes of x [N, C, D, H', W'] over depth windows: max or mean.
Tensor reduce_depth(const Tensor& x, int64_t k, int64_t stride, int64_t dil, bool is_max, const std::string& where) {
  int64_t span = size_add(size_mul(k - 1, dil, where.c_str()), 1, where.c_str());
  int64_t d_out = (x.size(2) - span) / stride + 1;
  if (d_out < 1) throw ShapeError(where + ": the input is smaller than the kernel");
  std::vector<Tensor> planes;
  for (int64_t od = 0; od < d_out; ++od) {
    Tensor acc;
    for (int64_t j = 0; j < k; ++j) {
      Tensor s = x.select(2, od * stride + j * dil);
      acc = !acc.defined() ? s : is_max ? maximum(acc, s) : add(acc, s);
    }
    planes.push_back(is_max ? acc : div(acc, static_cast<double>(k)));
  }
  return stack(planes, 2);
}

// Runs a 2-D pool over H and W of [N, C, D, H, W] by folding D into C.
template <class Pool2d>
Tensor per_depth(const Tensor& x, Pool2d pool) {
  Tensor flat = x.reshape({x.size(0), x.size(1) * x.size(2), x.size(3), x.size(4)});
  Tensor y = pool(flat);
  return y.reshape({x.size(0), x.size(1), x.size(2), y.size(2), y.size(3)});
}

bool fits_kernel(const Window& w) {
  for (size_t i = 0; i < w.kernel.size(); ++i)
    if (w.pad_begin[i] > w.kernel[i] / 2) return false;
  return w.symmetric();
}

OpFn build_max_pool(const NodeContext& ctx) {
  WindowAttrs attrs = window_attrs(ctx);
  if (attrs.kernel.empty()) ctx.invalid("attribute 'kernel_shape' is missing");
  ctx.require_default("storage_order", 0);
  bool want_indices = ctx.num_outputs > 1;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    size_t n = attrs.kernel.size();
    Window win = resolve_window(attrs, attrs.kernel, x, where);
    bool padded = !fits_kernel(win);
    if (padded) {
      if (want_indices) throw NotImplementedError(where + ": indices with this padding are not supported");
      x = pad_input(x, win, -std::numeric_limits<double>::infinity());
    }
    if (n == 3) {
      if (want_indices) throw NotImplementedError(where + ": indices of a 3-D pool are not supported");
      if (attrs.ceil_mode) throw NotImplementedError(where + ": ceil_mode in a 3-D pool is not supported");
      Window hw;
      hw.kernel = {win.kernel[1], win.kernel[2]};
      hw.stride = {win.stride[1], win.stride[2]};
      hw.dilation = {win.dilation[1], win.dilation[2]};
      hw.pad_begin = {win.pad_begin[1], win.pad_begin[2]};
      if (win.pad_begin[0] > 0) {
        Shape pb(5, 0), pe(5, 0);
        pb[2] = pe[2] = win.pad_begin[0];
        x = pad_constant(x, pb, pe, -std::numeric_limits<double>::infinity());
      }
      Tensor y = per_depth(x, [&](const Tensor& t) {
        return max_pool2d(t, pair(hw.kernel), pair(hw.stride), pair(hw.pad_begin), pair(hw.dilation),
                          attrs.ceil_mode);
      });
      return one(reduce_depth(y, win.kernel[0], win.stride[0], win.dilation[0], true, where));
    }
    Tensor xx = x;
    if (n == 1) {
      lift_1d(win);
      xx = x.unsqueeze(2);
    }
    if (!want_indices) {
      Tensor y = max_pool2d(xx, pair(win.kernel), pair(win.stride), pair(win.pad_begin), pair(win.dilation),
                            attrs.ceil_mode);
      return one(n == 1 ? y.squeeze(2) : y);
    }
    auto [y, idx] = max_pool2d_with_indices(xx, pair(win.kernel), pair(win.stride), pair(win.pad_begin),
                                            pair(win.dilation), attrs.ceil_mode);
    if (n == 1) {
      y = y.squeeze(2);
      idx = idx.squeeze(2);
    }
    std::vector<Tensor> out{y};
    {
      // ONNX counts indices over the whole tensor: add each plane's offset.
      int64_t plane = 1;
      for (int64_t d = 2; d < x.dim(); ++d) plane *= x.size(d);
      Shape s(static_cast<size_t>(idx.dim()), 1);
      s[0] = idx.size(0);
      s[1] = idx.size(1);
      Tensor base = mul(arange(0, idx.size(0) * idx.size(1), 1, TensorOptions(kInt64, idx.device())), plane);
      out.push_back(add(idx, base.reshape(s)));
    }
    return out;
  };
}

// Mean over windows counting every padded position (the divisor is the window
// size); planes of the right rank only, with no padding left in `win`.
Tensor avg_including_pad(const Tensor& x, const Window& win, bool ceil_mode, const std::string& where) {
  size_t n = win.kernel.size();
  if (n == 1) {
    Window w = win;
    lift_1d(w);
    return avg_pool2d(x.unsqueeze(2), pair(w.kernel), pair(w.stride), pair(w.pad_begin), ceil_mode, true).squeeze(2);
  }
  if (n == 2) return avg_pool2d(x, pair(win.kernel), pair(win.stride), pair(win.pad_begin), ceil_mode, true);
  if (ceil_mode) throw NotImplementedError(where + ": ceil_mode in a 3-D pool is not supported");
  Tensor y = per_depth(x, [&](const Tensor& t) {
    return avg_pool2d(t, {win.kernel[1], win.kernel[2]}, {win.stride[1], win.stride[2]}, {0, 0}, ceil_mode, true);
  });
  return reduce_depth(y, win.kernel[0], win.stride[0], 1, false, where);
}

OpFn build_average_pool(const NodeContext& ctx) {
  WindowAttrs attrs = window_attrs(ctx);
  if (attrs.kernel.empty()) ctx.invalid("attribute 'kernel_shape' is missing");
  if (!attrs.dilation.empty() && attrs.dilation != Shape(attrs.dilation.size(), 1)) ctx.unsupported("dilations");
  bool include_pad = ctx.get_int("count_include_pad", 0) != 0;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Window win = resolve_window(attrs, attrs.kernel, x, where);
    bool any_pad = false;
    for (size_t i = 0; i < win.kernel.size(); ++i) any_pad = any_pad || win.pad_begin[i] || win.pad_end[i];
    if (win.kernel.size() == 2 && fits_kernel(win))  // Ember's kernel handles both counting rules
      return one(avg_pool2d(x, pair(win.kernel), pair(win.stride), pair(win.pad_begin), attrs.ceil_mode, include_pad));
    Tensor xp = any_pad ? pad_input(x, win, 0.0) : x;
    Tensor y = avg_including_pad(xp, win, attrs.ceil_mode, where);
    if (any_pad && !include_pad) {
      // Divide by how many real (unpadded) values each window saw.
      Shape plane = x.shape();
      plane[0] = plane[1] = 1;
      Window w2 = resolve_window(attrs, attrs.kernel, x, where);
      Tensor real = pad_input(ones(plane, TensorOptions(x.dtype(), x.device())), w2, 0.0);
      Tensor count = avg_including_pad(real, win, attrs.ceil_mode, where);
      y = div(y, count);
    }
    return one(y);
  };
}

OpFn build_global_pool(const NodeContext& ctx) {
  bool is_max = ctx.op_type == "GlobalMaxPool";
  return [is_max](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape dims;
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    return one(is_max ? amax(x, dims, true) : mean(x, dims, true));
  };
}

// ---- normalization ----

// [C] -> [C, 1, ..., 1] to broadcast over an [N, C, ...] input.
Tensor per_channel(const Tensor& v, int64_t rank) {
  Shape s(static_cast<size_t>(std::max<int64_t>(rank - 1, 1)), 1);
  s[0] = v.numel();
  return v.reshape(s);
}

OpFn build_batch_norm(const NodeContext& ctx) {
  double eps = ctx.get_float("epsilon", 1e-5);
  // Opsets before 7 have is_test; Ember runs every BatchNormalization as
  // inference with the stored statistics, as ONNX Runtime does.
  if (ctx.opset < 9) ctx.require_default("spatial", 1);
  if (ctx.get_int("training_mode", 0) != 0) ctx.unsupported("training_mode=1");
  if (ctx.num_outputs > 1) ctx.unsupported("the training outputs (mean, var, saved statistics)");
  return [eps](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t r = x.dim();
    Tensor a = mul(in[1], rsqrt(add(in[4], eps)));     // scale / sqrt(var + eps)
    Tensor b = sub(in[2], mul(in[3], a));               // bias - mean * a
    return one(add(mul(x, per_channel(a, r)), per_channel(b, r)));
  };
}

OpFn build_instance_norm(const NodeContext& ctx) {
  double eps = ctx.get_float("epsilon", 1e-5);
  return [eps](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape dims;
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    Tensor m = mean(x, dims, true);
    Tensor v = var(x, dims, 0, true);
    Tensor y = mul(sub(x, m), rsqrt(add(v, eps)));
    return one(add(mul(y, per_channel(in[1], x.dim())), per_channel(in[2], x.dim())));
  };
}

OpFn build_layer_norm(const NodeContext& ctx) {
  int64_t axis = ctx.get_int("axis", -1);
  double eps = ctx.get_float("epsilon", 1e-5);
  if (ctx.get_int("stash_type", 1) != 1) ctx.unsupported("stash_type other than float");
  size_t outputs = ctx.num_outputs;
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    int64_t a = normalize_axis(where, axis, x.dim());
    Shape dims;
    for (int64_t d = a; d < x.dim(); ++d) dims.push_back(d);
    if (outputs == 1) {
      Shape normalized(x.shape().begin() + a, x.shape().end());
      Tensor bias = in.size() > 2 && in[2].defined() ? in[2] : Tensor();
      return one(ember::layer_norm(x, normalized, in[1], bias, eps));
    }
    // The mean and 1/std outputs: computed in float32 (stash_type 1) by parts.
    Tensor xf = x.dtype() == kFloat32 || x.dtype() == kFloat64 ? x : x.to(kFloat32);
    Tensor m = mean(xf, dims, true);
    Tensor inv = rsqrt(add(var(xf, dims, 0, true), eps));
    Tensor y = mul(sub(xf, m), inv).to(x.dtype());
    y = mul(y, in[1]);
    if (in.size() > 2 && in[2].defined()) y = add(y, in[2]);
    std::vector<Tensor> out{y};
    if (outputs > 1) out.push_back(m);
    if (outputs > 2) out.push_back(inv);
    return out;
  };
}

// ---- matrix products and softmax ----

}  // namespace

std::optional<Tensor> gemm_as_linear(const std::vector<Tensor>& in, bool trans_b, bool relu) {
  const Tensor& x = in[0];
  const Tensor& b = in[1];
  const Tensor c = in.size() > 2 ? in[2] : Tensor();
  if ((x.dtype() != kFloat32 && x.dtype() != kFloat64) || x.dim() != 2 || b.dim() != 2) return std::nullopt;
  if (autocast::applies(autocast::Policy::lower, {&x, &b, &c})) return std::nullopt;
  const Tensor w = trans_b ? b : b.t();  // [out, in]
  const bool c_fits = !c.defined() || (c.dim() == 1 && c.size(0) == w.size(0) && c.device() == x.device());
  if (!c_fits || x.size(1) != w.size(1) || w.device() != x.device()) return std::nullopt;
  return relu ? linear_relu(x, w, c) : linear(x, w, c);
}

namespace {

OpFn build_gemm(const NodeContext& ctx) {
  double alpha = ctx.get_float("alpha", 1.0), beta = ctx.get_float("beta", 1.0);
  bool ta = ctx.get_int("transA", 0) != 0, tb = ctx.get_int("transB", 0) != 0;
  const bool plain = !ta && alpha == 1.0 && beta == 1.0;
  return [=](const std::vector<Tensor>& given) {
    if (plain)
      if (std::optional<Tensor> y = gemm_as_linear(given, tb, false)) return one(std::move(*y));
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    Tensor a = ta ? in[0].t() : in[0], b = tb ? in[1].t() : in[1];
    // The bias, when there is one, is the GEMM's starting C (addmm).
    return one(addmm(in.size() > 2 ? in[2] : Tensor(), a, b, beta, alpha));
  };
}

OpFn build_matmul(const NodeContext&) {
  return [](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);  // integer MatMul with an int initializer
    return one(matmul(in[0], in[1]));
  };
}

OpFn build_softmax(const NodeContext& ctx) {
  bool log = ctx.op_type == "LogSoftmax";
  bool legacy = ctx.opset < 13;  // softmax over the input flattened to 2-D at axis
  int64_t axis = ctx.get_int("axis", legacy ? 1 : -1);
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() == 0) throw ShapeError(where + ": the input has no dims");
    int64_t a = normalize_axis(where, axis, x.dim());
    if (!legacy || a == x.dim() - 1) return one(log ? log_softmax(x, a) : softmax(x, a));
    Tensor flat = flatten_at(x, a);
    Tensor y = log ? log_softmax(flat, 1) : softmax(flat, 1);
    return one(y.reshape(x.shape()));
  };
}

// ---- Pad ----

OpFn build_pad(const NodeContext& ctx) {
  std::string mode_name = ctx.get_string("mode", "constant");
  PadMode mode = PadMode::Constant;
  if (mode_name == "reflect") mode = PadMode::Reflect;
  else if (mode_name == "edge") mode = PadMode::Replicate;
  else if (mode_name != "constant") ctx.unsupported("mode '" + mode_name + "'");
  bool attrs = ctx.opset < 11;
  Shape a_pads = ctx.get_ints(ctx.opset < 2 ? "paddings" : "pads");
  double a_value = ctx.get_float("value", 0.0);
  if (ctx.has_input(3)) ctx.unsupported("the axes input");
  std::string where = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Shape p = attrs ? a_pads : int_values(in[1]);
    if (static_cast<int64_t>(p.size()) != 2 * x.dim())
      throw ShapeError(where + ": pads has " + std::to_string(p.size()) + " values for a rank-" +
                       std::to_string(x.dim()) + " input");
    std::vector<Pair> pairs;
    for (int64_t d = 0; d < x.dim(); ++d) pairs.push_back({p[d], p[d + x.dim()]});
    if (mode != PadMode::Constant) return one(pad(x, pairs, mode));
    Tensor v = attrs || in.size() < 3 || !in[2].defined() || !in[2].numel() ? Tensor() : in[2];
    Scalar value = v.defined() ? v.item() : Scalar(a_value);
    return one(pad(x, pairs, mode, value));
  };
}

}  // namespace

void add_nn_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {
      {"Conv", build_conv}, {"ConvTranspose", build_conv_transpose}, {"MaxPool", build_max_pool},
      {"AveragePool", build_average_pool}, {"GlobalAveragePool", build_global_pool},
      {"GlobalMaxPool", build_global_pool}, {"BatchNormalization", build_batch_norm},
      {"InstanceNormalization", build_instance_norm}, {"LayerNormalization", build_layer_norm},
      {"Gemm", build_gemm}, {"MatMul", build_matmul}, {"Softmax", build_softmax},
      {"LogSoftmax", build_softmax}, {"Pad", build_pad},
  });
}

}  // namespace ember::onnx
