// The instruction sets the CPU kernels are compiled for, and the one pattern every
// kernel with per-ISA code follows: one file per instruction set, a table of
// function pointers per file, and one run-time choice (this header).
#pragma once

#include <cstdint>

// How a kernel family gets per-ISA code (the GEMM is the model; see docs/kernels-cpu.md):
//   <family>_impl.h      the code, written once over templates, in an anonymous
//                        namespace (a template with external linkage compiled for
//                        AVX-512 could be the copy the linker keeps for every caller)
//   <family>_<isa>.cpp   includes its standard headers first, then opens
//                        EMBER_ISA_BEGIN(<target>), includes the impl and fills in
//                        the family's table, closes with EMBER_ISA_END
//   <family>.cpp         holds a PerIsa<Table> of those tables and calls
//                        pick() each time: the widest table the active level allows
// A level's target string and its run-time check name the same features, so a table
// compiled for a level never runs on a CPU that lacks one of them.

// The compile targets. avx2 is the core of x86-64-v3 (AVX2, FMA, F16C); avx512 adds
// the F/VL/BW/DQ subsets every AVX-512 CPU since Skylake-X has; avx512_vnni adds
// vpdpbusd (the int8 GEMM); avx512_bf16 adds vdpbf16ps (the bfloat16 GEMM; every CPU
// with it has VNNI too: Cooper Lake, Sapphire Rapids, Zen 4 and later). Each level
// includes the ones below it.
#define EMBER_TARGET_AVX2 "avx2,fma,f16c"
#define EMBER_TARGET_AVX512 "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq"
#define EMBER_TARGET_AVX512_VNNI "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni"
#define EMBER_TARGET_AVX512_BF16 \
  "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx512bf16"

// Everything between EMBER_ISA_BEGIN(features) and EMBER_ISA_END is compiled for the
// features, templates included. GCC 12 reports AVX-512 intrinsics that seed their
// result with a self-initialized "undefined" vector as uninitialized or
// maybe-uninitialized (GCC PR 105593; unpack and shuffle intrinsics on 16 registers
// trip it), and vector types passed by value under -Wpsabi: all are silenced here.
#define EMBER_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define EMBER_ISA_BEGIN(features) \
  EMBER_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define EMBER_ISA_END EMBER_PRAGMA(clang attribute pop)
#else
#define EMBER_ISA_BEGIN(features)                                         \
  EMBER_PRAGMA(GCC push_options)                                          \
  EMBER_PRAGMA(GCC target(features))                                      \
  EMBER_PRAGMA(GCC diagnostic push)                                       \
  EMBER_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized")            \
  EMBER_PRAGMA(GCC diagnostic ignored "-Wuninitialized")                  \
  EMBER_PRAGMA(GCC diagnostic ignored "-Wpsabi")
#define EMBER_ISA_END EMBER_PRAGMA(GCC diagnostic pop) EMBER_PRAGMA(GCC pop_options)
#endif

namespace ember::cpu {

// Ordered: each level runs everything the ones before it run.
enum class Isa : int { generic, avx2, avx512, avx512_vnni, avx512_bf16 };
inline constexpr int kIsaCount = 5;

// "generic", "avx2", "avx512", "avx512_vnni", "avx512_bf16".
const char* isa_name(Isa isa);

// The widest level this CPU runs (checked once with CPUID).
Isa cpu_isa();

// The level kernels use now: cpu_isa() unless set_isa lowered it. Read on every
// kernel call, so it is a plain variable; it reads as generic, which runs anywhere,
// until isa.cpp's static initializer has run.
namespace isa_detail {
extern Isa active;
}  // namespace isa_detail
inline Isa active_isa() { return isa_detail::active; }

// Makes every later kernel call use tables of at most the named level ("generic",
// "avx2", "avx512", "avx512_vnni", "avx512_bf16", or "auto" for cpu_isa()), so that tests and
// benchmarks cover each variant on one machine. Returns false, changing nothing,
// for an unknown name or a level this CPU cannot run. Not thread-safe: call it while
// no kernel runs.
bool set_isa(const char* name);

// One kernel family's tables, given by level; null where the family has no code for
// that level (or this build cannot emit it). The generic table is never null. Most
// families stop at a lower level; the last argument is for the one that does not.
template <class Table>
class PerIsa {
 public:
  PerIsa(const Table* generic, const Table* avx2, const Table* avx512, const Table* avx512_vnni,
         const Table* avx512_bf16 = nullptr) {
    const Table* given[kIsaCount] = {generic, avx2, avx512, avx512_vnni, avx512_bf16};
    const Table* widest = generic;
    for (int i = 0; i < kIsaCount; ++i) resolved_[i] = widest = given[i] ? given[i] : widest;
  }

  // The table of the widest level at or below active_isa(): one indexed load, as
  // half conversions call this for every 256 elements.
  const Table& pick() const { return *resolved_[int(active_isa())]; }

 private:
  const Table* resolved_[kIsaCount];
};

}  // namespace ember::cpu
