// Loading OpenBLAS with dlopen and calling its CBLAS GEMMs through the symbols.
//
// OPENBLAS_CORETYPE picks the kernel family of a DYNAMIC_ARCH build and is read
// once, when the library loads, so it is set before dlopen: "SkylakeX" (its AVX-512
// kernels) on CPUs with avx512f, "Haswell" on AVX2 CPUs. An inherited value wins
// over OpenBLAS's own detection, and the development machine's environment presets
// Haswell: on that Zen 5 the AVX2 kernels reach about half of SkylakeX's GFLOP/s
// (OpenBLAS 0.3.21 left to itself picks Cooperlake, whose sgemm is SkylakeX's).
//
// OPENBLAS_L2_SIZE only replaces the L2 size OpenBLAS detects. Measured on the
// Zen 5 development machine (SkylakeX kernel, 2 threads, sgemm 128..2048) with it
// unset, 512, 1024 and 2048 KiB, every setting gave the same GFLOP/s within 1-2%
// noise, so it is set to the true L2 size from sysconf: that removes a misleading
// preset (512 KiB on a 1 MiB-L2 machine) and changes nothing else.
#include "bench/openblas_peer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ember::bench {
namespace {

// CBLAS enumerations, fixed by the CBLAS standard.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using NameFn = char* (*)();

std::string g_reason;

void choose_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  else if (__builtin_cpu_supports("avx2"))
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
#endif
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) setenv("OPENBLAS_L2_SIZE", std::to_string(l2 / 1024).c_str(), 1);
}

}  // namespace

const OpenBlas* OpenBlas::get(int threads) {
  static OpenBlas* lib = [] {
    choose_kernel();
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      g_reason = e ? e : "libopenblas.so.0 not found";
      return static_cast<OpenBlas*>(nullptr);
    }
    auto* o = new OpenBlas;
    o->handle_ = h;
    o->sgemm_ = dlsym(h, "cblas_sgemm");
    o->dgemm_ = dlsym(h, "cblas_dgemm");
    o->set_threads_ = dlsym(h, "openblas_set_num_threads");
    o->get_threads_ = dlsym(h, "openblas_get_num_threads");
    o->corename_ = dlsym(h, "openblas_get_corename");
    o->config_ = dlsym(h, "openblas_get_config");
    if (!o->sgemm_ || !o->dgemm_ || !o->set_threads_ || !o->get_threads_ || !o->corename_ ||
        !o->config_) {
      g_reason = "libopenblas.so.0 lacks a cblas_?gemm or openblas_* symbol";
      delete o;
      dlclose(h);
      return static_cast<OpenBlas*>(nullptr);
    }
    return o;
  }();
  if (lib) reinterpret_cast<SetThreadsFn>(lib->set_threads_)(threads < 1 ? 1 : threads);
  return lib;
}

std::string OpenBlas::unavailable_reason() { return g_reason; }

std::string OpenBlas::corename() const {
  const char* s = reinterpret_cast<NameFn>(corename_)();
  return s ? s : "?";
}

std::string OpenBlas::config() const {
  const char* s = reinterpret_cast<NameFn>(config_)();
  return s ? s : "?";
}

int OpenBlas::threads() const { return reinterpret_cast<GetThreadsFn>(get_threads_)(); }

void OpenBlas::sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                     int lda, const float* b, int ldb, float beta, float* c, int ldc) const {
  reinterpret_cast<SgemmFn>(sgemm_)(kRowMajor, trans_a ? kTrans : kNoTrans,
                                    trans_b ? kTrans : kNoTrans, m, n, k, alpha, a, lda, b, ldb,
                                    beta, c, ldc);
}

void OpenBlas::dgemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha,
                     const double* a, int lda, const double* b, int ldb, double beta, double* c,
                     int ldc) const {
  reinterpret_cast<DgemmFn>(dgemm_)(kRowMajor, trans_a ? kTrans : kNoTrans,
                                    trans_b ? kTrans : kNoTrans, m, n, k, alpha, a, lda, b, ldb,
                                    beta, c, ldc);
}

void* OpenBlas::symbol(const char* name) const { return dlsym(handle_, name); }

}  // namespace ember::bench
