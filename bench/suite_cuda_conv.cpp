// The cuda_conv suite: 2-D convolution on device buffers, Ember's own kernels
// (cuda::conv2d_*_native, im2col + GEMM, and for the layers with few output
// channels also cuda::conv2d_*_direct, in rows marked "direct") against cuDNN
// (cuda::conv2d_*_cudnn), forward, backward
// to the input and backward to the weight (and bias), in microseconds per call
// (lower is better; microseconds, since the table prints peers and floors to one
// decimal), float32. Shapes: the seed network's two convolutions at batch 1000
// (1->6 5x5 on 28x28, 6->12 5x5 on 12x12) and one larger layer (64->64 3x3,
// padding 1, on 56x56 at batch 32). The floor is the larger of the multiply-adds at
// the measured FMA peak and the bytes (each operand read once, the result written
// once) at the measured copy bandwidth. Each pass is first checked against the CPU
// kernel (kernels/cpu/conv2d.h) on the same data.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "bench/cuda_floors.h"
#include "bench/cuda_harness.h"
#include "ember.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/runtime.h"

namespace ember::bench {
namespace {

struct Layer {
  const char* name;
  Conv2dShape s;
};

Conv2dShape shape(int64_t n, int64_t c_in, int64_t hw, int64_t c_out, int64_t k, int64_t pad) {
  Conv2dShape s;
  s.n = n, s.c_in = c_in, s.h = s.w = hw, s.c_out = c_out, s.kh = s.kw = k, s.pad_h = s.pad_w = pad;
  return conv2d_set_output_size(s);
}

enum class Pass { forward, backward_input, backward_weight };
const char* pass_name(Pass p) {
  return p == Pass::forward ? "fwd" : p == Pass::backward_input ? "bwd input" : "bwd weight";
}

// The tensors one layer needs, on the device and (for the reference) on the CPU.
struct Buffers {
  Tensor x, w, bias, y, gy, gx, gw, gb;
};

Buffers make(const Conv2dShape& s, Device d) {
  const TensorOptions o(kFloat32, d);
  Buffers b;
  b.x = randn({s.n, s.c_in, s.h, s.w}, o);
  b.w = randn({s.c_out, s.c_in / s.groups, s.kh, s.kw}, o);
  b.bias = randn({s.c_out}, o);
  b.gy = randn({s.n, s.c_out, s.h_out, s.w_out}, o);
  b.y = empty(b.gy.shape(), o);
  b.gx = empty(b.x.shape(), o);
  b.gw = empty(b.w.shape(), o);
  b.gb = empty(b.bias.shape(), o);
  return b;
}

enum class Impl { native, direct, cudnn };

// One pass through one implementation, queued on Ember's stream.
void call(Pass p, Impl impl, const Conv2dShape& s, Buffers& b) {
  cudaStream_t st = cuda::stream();
  if (impl == Impl::direct) {
    if (p == Pass::forward)
      cuda::conv2d_forward_direct(kFloat32, s, b.x.data_ptr(), b.w.data_ptr(), b.bias.data_ptr(), b.y.data_ptr(), st);
    else if (p == Pass::backward_input)
      cuda::conv2d_backward_input_direct(kFloat32, s, b.gy.data_ptr(), b.w.data_ptr(), b.gx.data_ptr(), st);
    else
      cuda::conv2d_backward_weight_direct(kFloat32, s, b.gy.data_ptr(), b.x.data_ptr(), b.gw.data_ptr(),
                                          b.gb.data_ptr(), st);
    return;
  }
  if (impl == Impl::cudnn) {
    if (p == Pass::forward)
      cuda::conv2d_forward_cudnn(kFloat32, s, b.x.data_ptr(), b.w.data_ptr(), b.bias.data_ptr(), b.y.data_ptr(), st);
    else if (p == Pass::backward_input)
      cuda::conv2d_backward_input_cudnn(kFloat32, s, b.gy.data_ptr(), b.w.data_ptr(), b.gx.data_ptr(), st);
    else
      cuda::conv2d_backward_weight_cudnn(kFloat32, s, b.gy.data_ptr(), b.x.data_ptr(), b.gw.data_ptr(),
                                         b.gb.data_ptr(), st);
    return;
  }
  if (p == Pass::forward)
    cuda::conv2d_forward_native(kFloat32, s, b.x.data_ptr(), b.w.data_ptr(), b.bias.data_ptr(), b.y.data_ptr(), st);
  else if (p == Pass::backward_input)
    cuda::conv2d_backward_input_native(kFloat32, s, b.gy.data_ptr(), b.w.data_ptr(), b.gx.data_ptr(), st);
  else
    cuda::conv2d_backward_weight_native(kFloat32, s, b.gy.data_ptr(), b.x.data_ptr(), b.gw.data_ptr(),
                                        b.gb.data_ptr(), st);
}

// The pass's output(s) as one flat tensor (weight and bias gradients joined), for checks.
Tensor result(Pass p, const Buffers& b) {
  if (p == Pass::forward) return b.y.flatten();
  if (p == Pass::backward_input) return b.gx.flatten();
  return cat({b.gw.flatten().cpu(), b.gb.cpu()});
}

// The same pass by the CPU kernel on copies of the device inputs.
Tensor cpu_reference(Pass p, const Conv2dShape& s, const Buffers& d) {
  Buffers h{d.x.cpu(), d.w.cpu(), d.bias.cpu(), empty(d.y.shape()), d.gy.cpu(),
            empty(d.gx.shape()), empty(d.gw.shape()), empty(d.gb.shape())};
  if (p == Pass::forward)
    cpu::conv2d_forward(kFloat32, s, h.x.data_ptr(), h.w.data_ptr(), h.bias.data_ptr(), h.y.data_ptr());
  else if (p == Pass::backward_input)
    cpu::conv2d_backward_input(kFloat32, s, h.gy.data_ptr(), h.w.data_ptr(), h.gx.data_ptr());
  else
    cpu::conv2d_backward_weight(kFloat32, s, h.gy.data_ptr(), h.x.data_ptr(), h.gw.data_ptr(), h.gb.data_ptr());
  return result(p, h);
}

double floor_us(Pass p, const Conv2dShape& s) {
  const double macs = double(s.n) * s.c_out * s.h_out * s.w_out * (s.c_in / s.groups) * s.kh * s.kw;
  const double x = 4.0 * s.n * s.c_in * s.h * s.w, y = 4.0 * s.n * s.c_out * s.h_out * s.w_out,
               w = 4.0 * s.c_out * (s.c_in / s.groups) * s.kh * s.kw;
  const double bytes = p == Pass::forward ? x + w + y : p == Pass::backward_input ? y + w + x : y + x + w;
  const double compute_s = 2 * macs / (measured_cuda_fma_peak_tflops() * 1e12);
  const double memory_s = bytes / (measured_cuda_copy_gbs() * 1e9);
  return 1e6 * std::max(compute_s, memory_s);
}

void run(const Options& opt, Report& report) {
  set_num_threads(opt.threads);
  manual_seed(14);
  const bool have_cudnn = cuda::conv2d_have_cudnn();
  if (have_cudnn)
    std::printf("cuda_conv: ember = cuda::conv2d_*_native (rows marked direct: cuda::conv2d_*_direct), peer = "
                "cuda::conv2d_*_cudnn; us per call, lower is better (ember/peer > 1: slower than cuDNN; "
                "ember/floor: times the floor)\n");
  else
    std::printf("cuda_conv: ember = cuda::conv2d_*_native (rows marked direct: cuda::conv2d_*_direct); peer: none "
                "(built without cuDNN); us per call\n");
  const Layer layers[] = {{"1->6 5x5 28x28 b=1000", shape(1000, 1, 28, 6, 5, 0)},
                          {"6->12 5x5 12x12 b=1000", shape(1000, 6, 12, 12, 5, 0)},
                          {"64->64 3x3 56x56 b=32", shape(32, 64, 56, 64, 3, 1)}};
  for (const Layer& l : layers) {
    cuda_case(report, std::string("cuda_conv ") + l.name, [&] {
      Buffers b = make(l.s, Device("cuda"));
      for (Pass p : {Pass::forward, Pass::backward_input, Pass::backward_weight}) {
        const std::string name = std::string(l.name) + " " + pass_name(p);
        cuda_case(report, "cuda_conv " + name, [&] {
          const Tensor want = cpu_reference(p, l.s, b);
          // The weight gradient sums over batch and space (576,000 terms for conv1), so
          // the summation order shows more there.
          const double tol = p == Pass::backward_weight ? 1e-3 : 1e-4;
          call(p, Impl::native, l.s, b);
          check_close(report, "conv " + name + " native vs CPU", result(p, b), want, tol);
          const bool direct = cuda::conv2d_direct_suits(l.s);
          if (direct) {
            // NaN first: the outputs still hold the native pass's correct values.
            (p == Pass::forward ? b.y : p == Pass::backward_input ? b.gx : b.gw).fill_(NAN);
            if (p == Pass::backward_weight) b.gb.fill_(NAN);
            call(p, Impl::direct, l.s, b);
            check_close(report, "conv " + name + " direct vs CPU", result(p, b), want, tol);
          }
          if (have_cudnn) {
            call(p, Impl::cudnn, l.s, b);
            // Ember asks cuDNN for FMA math in float32 (no TF32), but its FFT and
            // Winograd algorithms round differently from a direct sum: 1e-3.
            check_close(report, "conv " + name + " cuDNN vs CPU", result(p, b), want, 1e-3);
          }
          const double cudnn_us = have_cudnn ? 1e3 * cuda_measure([&] { call(p, Impl::cudnn, l.s, b); }).median_ms : 0;
          for (Impl impl : {Impl::native, Impl::direct}) {
            if (impl == Impl::direct && !direct) continue;
            Record r;
            r.suite = "cuda_conv";
            r.case_name = impl == Impl::direct ? name + " direct" : name;
            r.unit = "us/call (lower is better)";
            r.ember = 1e3 * cuda_measure([&] { call(p, impl, l.s, b); }).median_ms;
            if (have_cudnn) {
              r.peer_name = "cudnn";
              r.peer = cudnn_us;
            }
            r.floor = floor_us(p, l.s);
            report.add(std::move(r));
          }
        });
      }
    });
  }
}

}  // namespace
}  // namespace ember::bench

EMBER_BENCH_SUITE(cuda_conv, ember::bench::run);
