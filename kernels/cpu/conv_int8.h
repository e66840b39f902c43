// The loops around the int8 GEMM (gemm_int8.h) that make an integer convolution
// of 8-bit codes (ONNX's ConvInteger and QLinearConv) matrix products over the
// output positions of a batch, one per group (in chunks):
//   out[oc][p] = sum_k (rows[p][k] - zx) * (w[oc][k] - zw[oc])
// where row p holds the input patch under output position p. The input is first
// turned channels-last, so a patch is kh * kw runs of the group's channels and
// the rows are built with copies of whole runs; the weights are packed in the same
// (ky, kx, channel) order. Padding reads the input's zero point, so it adds
// nothing to the sums. The GEMM leaves its sums position-major; conv_int8_store
// applies the zero points and the bias and writes them channel-major (NCHW).
// Positions run over the whole batch, so that small images still make products
// large enough to share among threads.
#pragma once

#include <cstdint>

namespace ember::cpu {

// One group's 2-D window over a channels-last image.
struct ConvInt8Shape {
  int64_t channels = 0;  // of the group (each patch run is this long)
  int64_t h = 0, w = 0, kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // the far side's padding only shows in h_out, w_out
  int64_t h_out = 0, w_out = 0;
};

// n images of [c][hw] codes to [hw][c] each, every byte XORed with `flip` (0x80
// turns int8 codes into uint8 ones, 128 higher).
void conv_int8_channels_last(int64_t n, int64_t c, int64_t hw, const uint8_t* x, uint8_t flip, uint8_t* out);

// The rows of output positions [q0, q1) of a batch, numbered image by image
// (position q is pixel q % (h_out * w_out) of image q / (h_out * w_out)): row
// q - q0 at rows + (q - q0) * ldr holds kh * kw runs of s.channels bytes, channel
// c0 onwards of the channels-last images x (x_channels bytes per pixel), `pad`
// where the window leaves the image, then zeros up to ldr (>= int8_padded_k of
// the row length). row_sums (may be null) receives each row's sum.
void conv_int8_rows(const ConvInt8Shape& s, const uint8_t* x, int64_t x_channels, int64_t c0, uint8_t pad,
                    int64_t q0, int64_t q1, uint8_t* rows, int64_t ldr, int32_t* row_sums);

// The sums c (q1 - q0 positions x n channels, position-major, as the GEMM leaves
// them) corrected and written channel-major: for position q (pixel p of image i)
// and channel j,
//   out[i * image_stride + j * P + p] = c[q - q0][j] - zw[j] * row_sums[q - q0]
//                                       - zx * col_sums[j] + k * zx * zw[j] + bias[j]
// with P = positions per image, wrapping in 32 bits as int32 sums do. row_sums
// may be null when every zw is 0; bias may be null.
struct ConvInt8Store {
  int64_t n = 0, k = 0, positions = 0, image_stride = 0;
  int32_t zx = 0;
  const int32_t *zw = nullptr, *row_sums = nullptr, *col_sums = nullptr, *bias = nullptr;
};
void conv_int8_store(const ConvInt8Store& st, int64_t q0, int64_t q1, const int32_t* c, int32_t* out);

}  // namespace ember::cpu
