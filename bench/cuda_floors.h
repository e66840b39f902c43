// The CUDA device's ceilings, measured in the same run as the CUDA suites (as
// bench/floors.h does for the CPU), so that each result reads as a fraction of what
// this card does today rather than of a datasheet. Each is measured on first use
// and cached. Only built with the CUDA backend.
#pragma once

#include "kernels/base/scalar.h"

namespace ember::bench {

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written:
// cudaMemcpyAsync of 256 MiB on Ember's stream, median of many copies.
double measured_cuda_copy_gbs();
constexpr double kCudaCopyBytes = double(256u << 20);

// Float32 FMA throughput of the SIMT cores in TFLOP/s (an FMA counts as two):
// independent FMA chains in every thread of a grid that fills the device.
double measured_cuda_fma_peak_tflops();

// The matrix rate the vendor library reaches: cuBLAS (gemm_cublas) on an
// 8192 x 8192 x 8192 product of random data in `dt`, TFLOP/s, median.
double measured_cuda_matrix_peak_tflops(DType dt);

}  // namespace ember::bench
