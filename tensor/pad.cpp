// Front-end of pad: N-d padding with a constant, by reflection or by replicating the
// edge, with negative pads cropping (ONNX Pad). Each dim's pads and the mode become
// a map from output coordinate to input coordinate (-1: the constant), which is all
// the kernel sees. The Pad node keeps the pads and mode (PadAttrs); since the map is
// separable, pad_backward folds the gradient one dim at a time, each fold a
// take_backward (a scatter-add) of that dim's map, so it runs on every device.
#include <cstring>

#include "kernels/cpu/pad.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember {
namespace {

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
  }
  return "?";
}

// The output size of each dim, after checking the pads against the input and mode.
Shape padded_shape(const Shape& in, const std::vector<Pair>& pads, PadMode mode) {
  if (pads.size() != in.size())
    throw ValueError(msg("pad(): expected one (begin, end) pair per dim (", in.size(), "), got ", pads.size()));
  if (in.empty()) throw ValueError("pad(): cannot pad a 0-dim tensor");
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t n = in[d], b = pads[d][0], e = pads[d][1];
    out[d] = size_add(size_add(n, b, "pad()"), e, "pad()");
    if (out[d] < 0)
      throw ValueError(msg("pad(): dim ", d, " of size ", n, " with pads (", b, ", ", e, ") gives a negative size ",
                           out[d]));
    if (mode == PadMode::Reflect && (b >= n || e >= n) && (b > 0 || e > 0))
      throw ValueError(msg("pad(): reflect padding (", b, ", ", e, ") must be less than the size ", n, " of dim ", d));
    if (mode == PadMode::Replicate && n == 0 && out[d] > 0)
      throw ValueError(msg("pad(): replicate padding of the empty dim ", d));
  }
  return out;
}

// For output coordinate o along a dim of input size n padded by b in front: the
// input coordinate it reads, or -1 for the constant.
int64_t source(int64_t o, int64_t n, int64_t b, PadMode mode) {
  const int64_t s = o - b;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Replicate: return s < 0 ? 0 : n - 1;
    case PadMode::Reflect: return s < 0 ? -s : 2 * (n - 1) - s;  // b, e < n: one reflection reaches
  }
  return -1;
}

std::vector<int64_t> dim_map(int64_t n, int64_t out, int64_t b, PadMode mode) {
  std::vector<int64_t> m(out);
  for (int64_t o = 0; o < out; ++o) m[o] = source(o, n, b, mode);
  return m;
}

// The bytes of `value` as one element of dtype dt (fill_ rules: ValueError when an
// integer dtype cannot hold it).
uint64_t fill_bits_of(Scalar value, DType dt) {
  Tensor v = full({1}, value, {dt, kCPU});
  uint64_t bits = 0;
  std::memcpy(&bits, v.data_ptr(), v.element_size());
  return bits;
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<Pair>& pads, PadMode mode, Scalar value) {
  const Shape out_shape = padded_shape(x.shape(), pads, mode);
  const uint64_t fill = fill_bits_of(value, x.dtype());
  Tensor y = empty(out_shape, {x.dtype(), x.device()});
  if (const OpBackend backend = backend_of("pad", x); backend != Backend::None && y.numel() > 0) {
    if (x.dim() > kMaxDims) throw ValueError(msg("pad(): at most ", kMaxDims, " dims are supported"));
    PadGeometry g;
    g.ndim = static_cast<int>(x.dim());
    std::vector<int64_t> maps;
    for (int d = 0; d < g.ndim; ++d) {
      g.out_sizes[d] = out_shape[d];
      g.in_strides[d] = x.stride()[d];
      g.map_offset[d] = static_cast<int64_t>(maps.size());
      const auto m = dim_map(x.shape()[d], out_shape[d], pads[d][0], mode);
      maps.insert(maps.end(), m.begin(), m.end());
    }
    NoGradGuard no_grad;
    Tensor map_t = tensor(maps);
    if (backend == Backend::CPU) {
      cpu::pad(x.element_size(), g, map_t.data_ptr<int64_t>(), x.data_ptr(), y.data_ptr(), fill);
    } else {
      EMBER_CUDA(Tensor map_dev = map_t.to(x.device());
                 cuda::pad(x.element_size(), g, map_dev.data_ptr<int64_t>(), x.data_ptr(), y.data_ptr(), fill,
                           stream_of(x)));
    }
  }
  if (needs_grad({&x})) {
    auto node = record(OpId::Pad, {&x}, {&y});
    node->attrs = PadAttrs{pads, mode, value.to_double()};
  }
  return y;
}

Tensor pad_backward(const Tensor& grad_y, const Shape& x_shape, const std::vector<Pair>& pads, PadMode mode) {
  const Shape out_shape = padded_shape(x_shape, pads, mode);
  if (grad_y.shape() != out_shape)
    throw ShapeError(msg("pad_backward(): grad of shape ", shape_str(grad_y.shape()), " but the ", mode_name(mode),
                         " padding of ", shape_str(x_shape), " gives ", shape_str(out_shape)));
  Tensor g = grad_y;
  for (int64_t d = 0; d < static_cast<int64_t>(x_shape.size()); ++d) {
    const int64_t n = x_shape[d], b = pads[d][0], e = pads[d][1];
    if (b == 0 && e == 0) continue;
    // The outputs that read an input element: all of them, except the constant's
    // fill, which is the run before b and after b + n.
    const auto m = dim_map(n, out_shape[d], b, mode);
    int64_t lo = 0, hi = out_shape[d];
    if (mode == PadMode::Constant) {
      lo = std::clamp<int64_t>(b, 0, hi);
      hi = std::clamp<int64_t>(b + n, lo, hi);
    }
    Shape in_shape = g.shape();
    in_shape[d] = n;
    g = take_backward(g.narrow(d, lo, hi - lo),
                      in_shape, d, tensor(std::vector<int64_t>(m.begin() + lo, m.begin() + hi)).to(g.device()));
  }
  return g.shape() == grad_y.shape() ? g.clone() : g;  // a fresh tensor even when nothing was padded
}

}  // namespace ember
