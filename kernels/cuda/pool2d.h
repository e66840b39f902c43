// 2-D max and average pooling on CUDA, NCHW, with the semantics of
// kernels/cpu/pool2d.h (PyTorch's window, padding, dilation, ceil_mode and divisor
// rules). Plain C++: the front-end includes it from .cpp files. Algorithm in
// pool2d.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/base/scalar.h"
#include "kernels/base/window.h"

namespace ember::cuda {

// All arrays are contiguous device memory; float32 and float64 only (any other
// dtype throws NotImplementedError). Work is queued on `stream`; nothing
// synchronizes.

// y = max over each window; indices (nullable) [n, c, h_out, w_out] = the position
// of the chosen element within its input plane, iy*w + ix. Ties go to the first
// element in row-major window order; a NaN is the maximum (the last NaN if
// several), as in PyTorch.
void max_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        int64_t* indices, cudaStream_t stream);

// grad_x (overwritten) [plane][k] = the sum of grad_y[o] over the outputs o of the
// plane with indices[o] == k, in increasing o, like the CPU's scatter.
// With the full window in s (kh, kw >= 1, and the forward's stride, padding and
// dilation) each grad_x element gathers from the windows that contain it: no
// atomics, deterministic, and bit-identical to the CPU. An index outside its own
// window (only a window with no element inside the input writes one) is then not
// followed, as in PyTorch's CUDA kernel. Without it (s.kh or s.kw == 0: only n, c,
// h, w, h_out and w_out are read, as on the CPU) grad_x is zeroed and scattered
// with atomicAdd, which is deterministic only while no element is the maximum of
// more than two windows (true whenever windows do not overlap).
void max_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x, cudaStream_t stream);

// y = sum over the window's input elements / divisor, where the divisor is
// divisor_override if set, else the window clipped to the padded input when
// count_include_pad, else the window clipped to the input. A window lying wholly
// in the padding gives 0.
void avg_pool2d_forward(DType dt, const Pool2dShape& s, const void* x, void* y,
                        cudaStream_t stream);

// grad_x (overwritten) = for each input element, the sum of grad_y[o] / divisor
// over the windows o that contain it, in increasing o (a gather: no atomics,
// bit-identical to the CPU's scatter).
void avg_pool2d_backward(DType dt, const Pool2dShape& s, const void* grad_y, void* grad_x,
                         cudaStream_t stream);

}  // namespace ember::cuda
