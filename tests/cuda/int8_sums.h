// The int8 GEMM's int32 sums checked against a naive loop: shared by the int8
// tests of the cuda suite (test_quant.cpp at several shapes, test_gemm_conv.cpp
// past grid.y's limit). a is [m, kp] uint8 and w [n, kp] int8 on the host.
#pragma once

#include <cstdint>
#include <vector>

#include "ember.h"
#include "kernels/cuda/gemm_int8.h"
#include "kernels/cuda/runtime.h"

namespace cuda_test {

// Runs cuda::gemm_int8_s32 on copies of a and w on cuda:0 and returns how many of
// its m x n sums differ from the exact ones.
inline int64_t wrong_int8_sums(const ember::Tensor& a, const ember::Tensor& w, int64_t m, int64_t n, int64_t kp) {
  using namespace ember;
  const Device gpu("cuda:0");
  const Tensor ad = a.to(gpu), wd = w.to(gpu);
  Tensor cd = full({m, n}, -1, {kInt32, gpu});
  cuda::gemm_int8_s32(m, n, kp, ad.data_ptr<uint8_t>(), wd.data_ptr<int8_t>(), cd.data_ptr<int32_t>(),
                      cuda::stream(0));
  const std::vector<int32_t> got = cd.to_vector<int32_t>();
  const uint8_t* ap = a.data_ptr<uint8_t>();
  const int8_t* wp = w.data_ptr<int8_t>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < kp; ++p) s += int64_t(ap[i * kp + p]) * wp[j * kp + p];
      wrong += got[size_t(i * n + j)] != s;
    }
  return wrong;
}

}  // namespace cuda_test
