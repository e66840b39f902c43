// OpenBLAS as the CPU peer, loaded with dlopen at run time so that the benchmark
// builds and runs on machines without it. Loading first points OpenBLAS at its best
// kernel for this CPU (see openblas_peer.cpp for why the environment is changed).
#pragma once

#include <string>

namespace ember::bench {

class OpenBlas {
 public:
  // The loaded library with its thread count set to `threads`, or nullptr when
  // libopenblas.so.0 (or one of the symbols used here) is missing.
  static const OpenBlas* get(int threads);

  // Why get() returned nullptr, for the "peer: none" line.
  static std::string unavailable_reason();

  std::string corename() const;  // the kernel family OpenBLAS chose, e.g. "SkylakeX"
  std::string config() const;    // its build configuration line
  int threads() const;

  // Row-major C = alpha op(A) op(B) + beta C with op = transpose when trans_*.
  void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
             const float* b, int ldb, float beta, float* c, int ldc) const;
  void dgemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
             int lda, const double* b, int ldb, double beta, double* c, int ldc) const;

  // Any other symbol of the library (cblas_saxpy, cblas_sdot, ...), for suites
  // that want a peer beyond GEMM; nullptr when absent.
  void* symbol(const char* name) const;

 private:
  OpenBlas() = default;
  void* handle_ = nullptr;
  void* sgemm_ = nullptr;
  void* dgemm_ = nullptr;
  void* set_threads_ = nullptr;
  void* get_threads_ = nullptr;
  void* corename_ = nullptr;
  void* config_ = nullptr;
};

}  // namespace ember::bench
