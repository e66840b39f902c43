// conv_integer (see conv_integer.h). As in matmul_integer.cpp, int8 x and uint8 w
// are moved into the kernel's uint8 x int8 domain by flipping the top bit, their
// zero points with them:
//   sum_k (x'_pk - zx')(w'_mk - zw'_m)
//     = sum_k x'_pk w'_mk - zw'_m rowsum(x')_p - zx' colsum(w')_m + K zx' zw'_m,
// so the GEMM sees the codes only. The weights are reordered to the rows' (ky, kx,
// channel) order and packed per group; the loops are kernels/cpu/conv_int8's.
#include "quant/conv_integer.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/gemm_int8.h"
#include "tensor/checks.h"
#include "tensor/nn_ops.h"
#include "tensor/ops.h"

namespace ember::quant {

struct PackedConvWeights {
  Shape shape;  // w's
  DType dtype = kInt8;  // w's: the flip applied when packing
  int64_t groups = 1, k = 0, group_bytes = 0;
  Tensor packed;    // int8: per group, cpu::pack_int8_weights' layout of that group's w'
  Tensor col_sums;  // int32 [M]: sum_k w'_mk
};

namespace {

// The products stay exact in the int8 kernel's int32 lanes up to this many terms.
constexpr int64_t kMaxKernelK = 65536;

void check_codes(const std::string& site, const Tensor& x, const Tensor& w) {
  for (const Tensor* t : {&x, &w})
    if (t->dtype() != kInt8 && t->dtype() != kUInt8)
      throw DTypeError(msg(site, ": x and w must be int8 or uint8, got ", t->dtype()));
}

void check_zero(const std::string& site, const char* name, const Tensor& zero, const Tensor& of) {
  if (zero.defined() && zero.dtype() != of.dtype())
    throw DTypeError(msg(site, ": the zero point of ", name, " must be ", of.dtype(), " like ", name, ", got ",
                         zero.dtype()));
}

void check_shapes(const std::string& site, const Tensor& x, const Tensor& w, int64_t groups) {
  if (x.dim() != 4 || w.dim() != 4)
    throw ShapeError(msg(site, ": x must be [N, C, H, W] and w [M, C / group, kH, kW], got shapes ",
                         shape_str(x.shape()), " and ", shape_str(w.shape())));
  if (groups < 1 || w.size(0) % groups != 0 || x.size(1) != w.size(1) * groups)
    throw ShapeError(msg(site, ": w of shape ", shape_str(w.shape()), " does not fit ", x.size(1),
                         " input channels in ", groups, " groups"));
}

PackedConvWeights pack_host(const Tensor& w, int64_t groups) {
  PackedConvWeights p;
  p.shape = w.shape();
  p.dtype = w.dtype();
  p.groups = groups;
  const int64_t m = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3), mg = m / groups;
  p.k = cg * kh * kw;
  const uint8_t flip = w.dtype() == kUInt8 ? 0x80 : 0;
  const auto* src = static_cast<const uint8_t*>(w.data_ptr());
  // w'[o][(ky * kw + kx) * cg + c] = w[o][c][ky][kx] (top bit flipped for uint8).
  std::vector<int8_t> r(static_cast<size_t>(m * p.k));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < kh * kw; ++t)
        r[size_t(o * p.k + t * cg + c)] = int8_t(uint8_t(src[(o * cg + c) * kh * kw + t] ^ flip));
  p.group_bytes = cpu::packed_int8_weights_bytes(mg, p.k);
  p.packed = empty({std::max<int64_t>(groups * p.group_bytes, 1)}, kInt8);
  p.col_sums = empty({m}, kInt32);
  for (int64_t g = 0; g < groups; ++g)
    cpu::pack_int8_weights(mg, p.k, r.data() + g * mg * p.k, p.k, p.packed.data_ptr<int8_t>() + g * p.group_bytes,
                           p.col_sums.data_ptr<int32_t>() + g * mg);
  return p;
}

// Whether the int8 GEMM beats the float64 convolution (2 threads on the
// development machine, a Zen 5 with VNNI). Patch rows built from runs of a few
// bytes, and products with a few output channels (of the GEMM's 32-channel
// panels) cost more than they save: the seed CNN's first layer (1 channel, 5x5,
// 6 outputs, 1000 images) took 13.8 ms on the GEMM and 3.7 in float64, 3 channels
// under 3x3 1.10 against 0.81, 64 channels to 4 outputs 0.41 against 0.33; with 8
// outputs, or 16 channels under 3x3, the GEMM was 1.6 to 2.3x faster, and 64 to
// 256 channels under 3x3 10 to 18x.
bool int8_gemm_pays(int64_t channels_per_group, int64_t kw, int64_t outputs_per_group) {
  return channels_per_group * kw >= 16 && outputs_per_group >= 8;
}

// One value of a zero point, or 0.
int32_t scalar_zero(const Tensor& z) { return z.defined() ? z.to(kCPU).to(kInt32).item<int32_t>() : 0; }

// The exact float64 convolution: codes minus zero points, padding of zero.
Tensor float64_path(const Tensor& x, const Tensor& w, const Tensor& x_zero, const Tensor& w_zero, const Tensor& bias,
                    const ConvIntegerWindow& win) {
  Tensor xf = x.to(kFloat64), wf = w.to(kFloat64);
  if (x_zero.defined()) xf = sub(xf, x_zero.to(x.device(), kFloat64).reshape({}));
  if (w_zero.defined()) {
    const Tensor z = w_zero.to(w.device(), kFloat64);
    wf = sub(wf, z.numel() == 1 ? z.reshape({}) : z.reshape({w.size(0), 1, 1, 1}));
  }
  Pair padding{win.pad_begin[0], win.pad_begin[1]};
  if (win.pad_begin != win.pad_end) {
    xf = pad(xf, {{0, 0}, {0, 0}, {win.pad_begin[0], win.pad_end[0]}, {win.pad_begin[1], win.pad_end[1]}},
             PadMode::Constant, 0.0);
    padding = {0, 0};
  }
  const Tensor bf = bias.defined() ? bias.to(x.device(), kFloat64) : Tensor();
  // Every sum is an integer of magnitude below 2^53: exact, and int64 -> int32 wraps.
  return conv2d(xf, wf, bf, {win.stride[0], win.stride[1]}, padding, {win.dilation[0], win.dilation[1]}, win.groups)
      .to(kInt64)
      .to(kInt32);
}

}  // namespace

std::shared_ptr<const PackedConvWeights> pack_conv_weights(const Tensor& w, int64_t groups, const std::string& site) {
  check_codes(site, w, w);
  if (w.dim() != 4 || groups < 1 || w.size(0) % groups != 0)
    throw ShapeError(msg(site, ": w of shape ", shape_str(w.shape()), " cannot be packed in ", groups, " groups"));
  return std::make_shared<const PackedConvWeights>(pack_host(w.to(kCPU).contiguous(), groups));
}

Tensor conv_integer(const Tensor& x, const Tensor& w, const Tensor& x_zero, const Tensor& w_zero, const Tensor& bias,
                    const ConvIntegerWindow& win, const std::string& site, const PackedConvWeights* packed,
                    ConvIntegerPath path) {
  check_codes(site, x, w);
  check_zero(site, "x", x_zero, x);
  check_zero(site, "w", w_zero, w);
  check_same_device(x, w);
  check_shapes(site, x, w, win.groups);
  for (int d = 0; d < 2; ++d)
    if (win.stride[d] < 1 || win.dilation[d] < 1 || win.pad_begin[d] < 0 || win.pad_end[d] < 0)
      throw ValueError(msg(site, ": strides and dilations must be positive and pads not negative"));
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t m = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3);
  if (x_zero.defined() && x_zero.numel() != 1)
    throw ShapeError(msg(site, ": x's zero point must hold one value, got shape ", shape_str(x_zero.shape())));
  if (w_zero.defined() && w_zero.numel() != 1 && !(w_zero.dim() == 1 && w_zero.size(0) == m))
    throw ShapeError(msg(site, ": w's zero point must hold one value or one per output channel, got shape ",
                         shape_str(w_zero.shape())));
  if (bias.defined() && bias.dtype() != kInt32)
    throw DTypeError(msg(site, ": the bias must be int32, got ", bias.dtype()));
  if (bias.defined() && !(bias.dim() == 1 && bias.size(0) == m))
    throw ShapeError(msg(site, ": the bias must hold one value per output channel, got shape ",
                         shape_str(bias.shape())));
  if (packed && (packed->shape != w.shape() || packed->dtype != w.dtype() || packed->groups != win.groups))
    throw ValueError(msg(site, ": the packed weights were made for another w or group count"));
  // The output's size, with the sizes from outside checked for overflow.
  const char* op = site.c_str();
  const int64_t ph = size_add(size_add(h, win.pad_begin[0], op), win.pad_end[0], op);
  const int64_t pw = size_add(size_add(wd, win.pad_begin[1], op), win.pad_end[1], op);
  const int64_t rh = size_add(size_mul(kh - 1, win.dilation[0], op), 1, op);
  const int64_t rw = size_add(size_mul(kw - 1, win.dilation[1], op), 1, op);
  if (kh < 1 || kw < 1)
    throw ShapeError(msg(site, ": the kernel must have at least one tap, got w of shape ", shape_str(w.shape())));
  if (ph < rh || pw < rw)
    throw ShapeError(msg(site, ": the padded input (", ph, " x ", pw, ") is smaller than the kernel's reach (", rh,
                         " x ", rw, ")"));
  const int64_t oh = (ph - rh) / win.stride[0] + 1, ow = (pw - rw) / win.stride[1] + 1;
  const int64_t k = cg * kh * kw;
  const bool gemm = path == ConvIntegerPath::Int8Gemm ||
                    (path == ConvIntegerPath::Auto && int8_gemm_pays(cg, kw, m / win.groups));
  if (!gemm || !x.device().is_cpu() || k > kMaxKernelK) return float64_path(x, w, x_zero, w_zero, bias, win);

  if (k == 0 || n == 0 || m == 0) {  // no products: every sum is its bias
    if (!bias.defined()) return zeros({n, m, oh, ow}, kInt32);
    return bias.to(kCPU).reshape({1, m, 1, 1}).expand({n, m, oh, ow}).contiguous();
  }
  std::shared_ptr<const PackedConvWeights> own;
  if (!packed) {
    own = pack_conv_weights(w, win.groups, site);
    packed = own.get();
  }
  const int64_t groups = win.groups, mg = m / groups, P = oh * ow, kp = cpu::int8_padded_k(k);
  const uint8_t x_flip = x.dtype() == kInt8 ? 0x80 : 0;
  const int32_t zx = scalar_zero(x_zero) + (x_flip ? 128 : 0);
  const uint8_t pad = uint8_t(uint8_t(scalar_zero(x_zero)) ^ x_flip);
  std::vector<int32_t> zw(size_t(m), w.dtype() == kUInt8 ? -128 : 0);
  if (w_zero.defined()) {
    const Tensor z = w_zero.to(kCPU, kInt32);
    const std::vector<int32_t> given = (z.numel() == 1 ? z.reshape({}) : z).expand({m}).contiguous().to_vector<int32_t>();
    for (int64_t o = 0; o < m; ++o) zw[size_t(o)] += given[size_t(o)];
  }
  bool zw_zero = true;  // then the rows' sums are not needed
  for (int32_t z : zw) zw_zero = zw_zero && z == 0;

  cpu::ConvInt8Shape s;
  s.channels = cg;
  s.h = h;
  s.w = wd;
  s.kh = kh;
  s.kw = kw;
  s.stride_h = win.stride[0];
  s.stride_w = win.stride[1];
  s.dil_h = win.dilation[0];
  s.dil_w = win.dilation[1];
  s.pad_top = win.pad_begin[0];
  s.pad_left = win.pad_begin[1];
  s.h_out = oh;
  s.w_out = ow;
  // The batch's output positions in chunks of about 1 MiB of rows, so that the
  // rows a GEMM reads were written moments before.
  const int64_t total = n * P;
  const int64_t chunk = std::min(total, std::max<int64_t>(64, (int64_t(1) << 20) / kp));
  const Tensor xc = x.contiguous();
  Tensor out = empty({n, m, oh, ow}, kInt32);
  Tensor last = empty({n * h * wd, c}, kUInt8);  // the images, channels last
  // A 1x1 window of stride 1 without padding over one group reads each pixel's
  // channels as its row: the channels-last images are the rows already, when
  // they fill whole groups of 4 bytes and no row sums are needed.
  const bool pixel_rows = kh == 1 && kw == 1 && win.stride == std::array<int64_t, 2>{1, 1} && groups == 1 &&
                          win.pad_begin == std::array<int64_t, 2>{0, 0} &&
                          win.pad_end == std::array<int64_t, 2>{0, 0} && c == kp && zw_zero;
  Tensor rows = pixel_rows ? Tensor() : empty({chunk, kp}, kUInt8);
  Tensor sums = empty({chunk, mg}, kInt32);
  std::vector<int32_t> row_sums(zw_zero ? 0 : size_t(chunk));
  cpu::conv_int8_channels_last(n, c, h * wd, static_cast<const uint8_t*>(xc.data_ptr()), x_flip,
                               last.data_ptr<uint8_t>());
  const Tensor bias_cpu = bias.defined() ? bias.to(kCPU).contiguous() : Tensor();
  cpu::ConvInt8Store st;
  st.n = mg;
  st.k = k;
  st.positions = P;
  st.image_stride = m * P;
  st.zx = zx;
  st.row_sums = zw_zero ? nullptr : row_sums.data();
  for (int64_t g = 0; g < groups; ++g) {
    const int8_t* wg = packed->packed.data_ptr<int8_t>() + g * packed->group_bytes;
    st.zw = zw.data() + g * mg;
    st.col_sums = packed->col_sums.data_ptr<int32_t>() + g * mg;
    st.bias = bias_cpu.defined() ? bias_cpu.data_ptr<int32_t>() + g * mg : nullptr;
    for (int64_t q0 = 0; q0 < total; q0 += chunk) {
      const int64_t q1 = std::min(total, q0 + chunk);
      const uint8_t* a = last.data_ptr<uint8_t>() + q0 * c;
      if (!pixel_rows) {
        cpu::conv_int8_rows(s, last.data_ptr<uint8_t>(), c, g * cg, pad, q0, q1, rows.data_ptr<uint8_t>(), kp,
                            zw_zero ? nullptr : row_sums.data());
        a = rows.data_ptr<uint8_t>();
      }
      cpu::gemm_int8_s32(q1 - q0, mg, k, a, pixel_rows ? c : kp, wg, sums.data_ptr<int32_t>(), mg);
      cpu::conv_int8_store(st, q0, q1, sums.data_ptr<int32_t>(), out.data_ptr<int32_t>() + g * mg * P);
    }
  }
  return out;
}

}  // namespace ember::quant
