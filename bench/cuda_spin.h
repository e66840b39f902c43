// A kernel that keeps the GPU busy for a given time (bench/cuda_spin.cu). Queued
// before timed calls, it lets their launches pile up behind it, so the events
// around each call time the GPU's work rather than the host's launch overhead.
#pragma once

#include <cuda_runtime_api.h>

namespace ember::bench {

// One thread that waits `ms` milliseconds of the GPU's global timer on `stream`.
void launch_spin(double ms, cudaStream_t stream);

}  // namespace ember::bench
