// The machine's ceilings, measured in the same run as the benchmarks so that every
// result can be read as a fraction of what this machine, today, can do. Each is
// measured on first use for a thread count and cached.
#pragma once

namespace ember::bench {

// Peak multiply-add throughput, in GFLOP/s (an FMA counts as two), on `threads`
// OpenMP threads: independent FMA chains in the widest vector registers this CPU
// has (AVX-512, AVX2 or 16-byte vectors, chosen at run time).
double measured_fma_peak_gflops(int threads, bool float64 = false);

// Peak bfloat16 multiply-add throughput in GFLOP/s: vdpbf16ps chains where the CPU
// has AVX512_BF16 (two multiply-adds per lane per instruction), else the float32 FMA
// peak, which is what the bfloat16 GEMM's widening path runs on.
double measured_bf16_peak_gflops(int threads);

// Memory copy bandwidth in GB/s, counting bytes read plus bytes written: 64 MiB
// copied by `threads` OpenMP threads, best of several runs.
double measured_copy_bandwidth_gbs(int threads);

// One copy of the copy floor's 64 MiB on `threads` threads; returns the bytes it
// moved (read plus written). The memory-bound suites time it in rounds alternating
// with each case, so that a case and its floor see the same minutes of a machine
// shared with other tenants.
double copy_once(int threads);

// Which vector width the FMA loop used: "avx512", "avx2" or "generic".
const char* fma_peak_isa();

}  // namespace ember::bench
