// Which instruction-set level this CPU runs and which one the kernels use (see
// isa.h). The run-time checks list exactly the features of the EMBER_TARGET_* strings.
#include "kernels/cpu/isa.h"

#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ember::cpu {
namespace {

#if defined(__x86_64__)
// F16C straight from CPUID (leaf 1, ECX): clang's __builtin_cpu_supports does not
// know the name, and Ember builds with clang for its sanitizer and fuzzing runs.
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// AVX512_BF16 from CPUID leaf 7, sub-leaf 1, EAX bit 5: older compilers' cpu-model
// tables do not all know the name either.
bool has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
}
#endif

bool runs(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case Isa::generic: return true;
    case Isa::avx2: return avx2;
    case Isa::avx512: return avx512;
    case Isa::avx512_vnni: return avx512 && __builtin_cpu_supports("avx512vnni");
    case Isa::avx512_bf16: return avx512 && __builtin_cpu_supports("avx512vnni") && has_avx512_bf16();
  }
  return false;
#else
  return isa == Isa::generic;
#endif
}

Isa detect() {
  for (int i = kIsaCount - 1; i > 0; --i)
    if (runs(Isa(i))) return Isa(i);
  return Isa::generic;
}

}  // namespace

Isa isa_detail::active = cpu_isa();

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::generic: return "generic";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_vnni: return "avx512_vnni";
    case Isa::avx512_bf16: return "avx512_bf16";
  }
  return "?";
}

Isa cpu_isa() {
  static const Isa isa = detect();
  return isa;
}

bool set_isa(const char* name) {
  const std::string_view s = name ? name : "";
  if (s == "auto") {
    isa_detail::active = cpu_isa();
    return true;
  }
  for (int i = 0; i < kIsaCount; ++i)
    if (s == isa_name(Isa(i))) {
      if (!runs(Isa(i))) return false;
      isa_detail::active = Isa(i);
      return true;
    }
  return false;
}

}  // namespace ember::cpu
