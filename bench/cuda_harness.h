// What the CUDA suites share: a check that a device is there (with the reason when
// it is not), a description of the device for the log, and timing with CUDA events.
// Device work is queued asynchronously, so a host clock around a call measures the
// launch, not the work: each repetition is bracketed by two events on Ember's
// stream and the median of the event intervals is the result. Events time the GPU
// only while it is behind the host, so calls whose launch costs the host more than
// their work costs the GPU are queued behind a spin kernel (bench/cuda_spin.h).
// Only built with the CUDA backend (bench/meson.build).
#pragma once

#include <functional>
#include <string>

#include "bench/harness.h"
#include "tensor/tensor.h"

namespace ember::bench {

// True when a CUDA device can be used; otherwise false and *why says what is
// missing (no driver, no device, the driver's own error text).
bool cuda_device_ready(std::string* why);

// One line per fact: device name, SMs, memory, clocks, L2, driver and runtime.
void print_cuda_environment();

struct CudaTiming {
  double median_ms = 0;
  double best_ms = 0;
  int reps = 0;
  double host_ms = 0;  // the host's time to queue one call (its launch overhead)
};

// Calls f `warmup` times (module load, cuBLAS/cuDNN handles and their workspaces,
// the caching allocator's first cudaMalloc stay out of the numbers), sizes the
// repetition count so the timed part lasts about target_ms (at least min_reps, at
// most max_reps), then records an event before and after each call on Ember's
// stream and returns the median and best interval. When queuing a call takes the
// host at least half as long as the GPU's work, the calls are queued in batches,
// each behind a spin kernel that lasts as long as queuing the batch, so that the
// GPU never waits for the host between the events. f must queue its work on Ember's
// stream (the tensor front-ends and the kernel entry points given
// ember::cuda::stream() do).
CudaTiming cuda_measure(const std::function<void()>& f, double target_ms = 200, int warmup = 3,
                        int min_reps = 10, int max_reps = 2000);

// Runs one case of a suite; an exception (a CUDA error, an unsupported dtype)
// becomes a FAILED line naming the case, and the suite goes on with the next case.
void cuda_case(Report& report, const std::string& what, const std::function<void()>& body);

// A memory-bound op: `bytes` (the fewest the op must move) over the median time,
// in GB/s, beside the device-to-device copy bandwidth as the floor.
void report_cuda_bandwidth(Report& report, const char* suite, const std::string& name, double bytes,
                           const std::function<void()>& op);

// max |got - want| / max |want| over all elements, computed on the CPU in float64
// (both tensors are copied there): a normwise relative error that stays meaningful
// where single elements are near zero. Prints one check line; a result over `tol`
// (or NaN) fails the report. Returns whether it passed.
bool check_close(Report& report, const std::string& what, const Tensor& got, const Tensor& want,
                 double tol);

}  // namespace ember::bench
