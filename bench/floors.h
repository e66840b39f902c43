// The machine's ceilings, measured in the same run as the benchmarks so that every
// result can be read as a fraction of what this machine, today, can do. Each is
// measured on first use for a thread count and cached.
#pragma once

namespace ember::bench {

// Peak multiply-add throughput, in GFLOP/s (an FMA counts as two), on `threads`
// OpenMP threads: independent FMA chains in the widest vector registers this CPU
// has (AVX-512, AVX2 or 16-byte vectors, chosen at run time).
double measured_fma_peak_gflops(int threads, bool float64 = false);

// Memory copy bandwidth in GB/s, counting bytes read plus bytes written: 64 MiB
// copied by `threads` OpenMP threads, best of several runs.
double measured_copy_bandwidth_gbs(int threads);

// Which vector width the FMA loop used: "avx512", "avx2" or "generic".
const char* fma_peak_isa();

}  // namespace ember::bench
