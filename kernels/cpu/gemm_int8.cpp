// The int8 GEMM driver (see gemm_int8.h): weight packing, the portable panel kernel,
// the run-time kernel choice, and the split of the product over threads. Work items
// are (block of activation rows) x (weight panel), numbered row block first, so each
// thread takes a contiguous run of panels for one or two row blocks: the panels it
// reads stay in its own L2, and the row block (sized to ~256 KiB) stays there too.
#include "kernels/cpu/gemm_int8.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm_int8_kernel.h"
#include "kernels/cpu/isa.h"

namespace ember::cpu {
namespace gemm_int8_detail {
namespace {

// Below this many multiply-adds (about 12 us on one Zen 5 core) one thread finishes
// before a sleeping team wakes up: with OMP_WAIT_POLICY=passive, as the test suites
// and shared machines run, a wake-up costs tens of microseconds, and the MLP's
// 784x1024 layer at batch 1 took 107 us threaded against 15 us on one thread.
constexpr double kSerialWork = double(1 << 22);
// A single row streams the weights once and does little else: a second core did not
// speed up 1 x 4096 x 4096 (weights in L3) on the development machine, so one row
// uses one thread unless the weights are far larger than that.
constexpr double kSerialRowBytes = double(64 << 20);
constexpr int64_t kRowBlockBytes = 256 << 10;

// The portable kernel: the same arithmetic as vpdpbusd, one row at a time. GCC
// vectorizes the inner loop over the panel's 32 channels.
void panel_generic(int64_t rows, int64_t ncols, int64_t kp, const uint8_t* a, int64_t lda, const int8_t* panel,
                   const Int8Epilogue* ep, int64_t col0, void* c, int64_t ldc) {
  constexpr int64_t NR = kInt8PanelCols;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* ar = a + r * lda;
    int32_t acc[NR] = {};
    for (int64_t g = 0; g < kp / 4; ++g) {
      const int8_t* bg = panel + g * 4 * NR;
      const int32_t a0 = ar[4 * g], a1 = ar[4 * g + 1], a2 = ar[4 * g + 2], a3 = ar[4 * g + 3];
      for (int64_t j = 0; j < NR; ++j)
        acc[j] += a0 * bg[4 * j] + a1 * bg[4 * j + 1] + a2 * bg[4 * j + 2] + a3 * bg[4 * j + 3];
    }
    if (!ep) {
      std::memcpy(static_cast<int32_t*>(c) + r * ldc, acc, sizeof(int32_t) * size_t(ncols));
      continue;
    }
    float* cr = static_cast<float*>(c) + r * ldc;
    for (int64_t j = 0; j < ncols; ++j) {
      const int64_t col = col0 + j;
      const int64_t corrected = int64_t(acc[j]) - int64_t(ep->a_zero_point) * ep->w_row_sums[col];
      const float scale = ep->a_scale * (ep->per_channel ? ep->w_scales[col] : ep->w_scales[0]);
      float y = float(int32_t(corrected)) * scale;
      if (ep->bias) y += ep->bias[col];
      cr[j] = y;
    }
  }
}

constexpr Int8Kernel kGeneric{"generic", panel_generic};

// The panel kernel of the active instruction set (see isa.h): VNNI or the plain loop.
const Int8Kernel& kernel() {
  static const PerIsa<Int8Kernel> tables(
      &kGeneric, nullptr,
      nullptr, int8_kernel_vnni512());
  return tables.pick();
}

void run(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_w,
         const Int8Epilogue* ep, void* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const Int8Kernel& K = kernel();
  const int64_t kp = int8_padded_k(k);
  const int64_t panels = (n + kInt8PanelCols - 1) / kInt8PanelCols;
  // Equal row blocks of at most ~kRowBlockBytes of A each: 64 rows of 4096 bytes are
  // one block of 64, not 60 and a sliver of 4 that would stream every panel again.
  const int64_t mc_max = std::max<int64_t>(12, kRowBlockBytes / std::max<int64_t>(kp, 1));
  const int64_t row_blocks = (m + mc_max - 1) / mc_max;
  const int64_t mc = (m + row_blocks - 1) / row_blocks;
  const int64_t items = row_blocks * panels;
  const size_t elem = ep ? sizeof(float) : sizeof(int32_t);
  auto item = [&](int64_t it) {
    const int64_t ib = it / panels, p = it % panels;
    const int64_t r0 = ib * mc, rows = std::min(mc, m - r0);
    const int64_t col0 = p * kInt8PanelCols;
    K.panel(rows, std::min(kInt8PanelCols, n - col0), kp, a + r0 * lda, lda, packed_w + p * kp * kInt8PanelCols,
            ep, col0, static_cast<char*>(c) + (r0 * ldc + col0) * int64_t(elem), ldc);
  };
  const bool threads = !omp_in_parallel() && get_num_threads() > 1 && items > 1 &&
                       double(m) * double(n) * double(k) >= kSerialWork &&
                       (m > 1 || double(n) * double(kp) >= kSerialRowBytes);
  if (!threads) {
    for (int64_t it = 0; it < items; ++it) item(it);
    return;
  }
#pragma omp parallel for num_threads(get_num_threads()) schedule(static)
  for (int64_t it = 0; it < items; ++it) item(it);
}

}  // namespace
}  // namespace gemm_int8_detail

int64_t packed_int8_weights_bytes(int64_t n, int64_t k) {
  const int64_t panels = (n + kInt8PanelCols - 1) / kInt8PanelCols;
  return panels * int8_padded_k(k) * kInt8PanelCols;
}

void pack_int8_weights(int64_t n, int64_t k, const int8_t* w, int64_t w_rs, int8_t* out, int32_t* row_sums) {
  const int64_t kp = int8_padded_k(k);
  const int64_t panels = (n + kInt8PanelCols - 1) / kInt8PanelCols;
  // An empty layer (n or k zero) packs nothing, and `out` may then be null.
  if (const int64_t bytes = packed_int8_weights_bytes(n, k); bytes > 0) std::memset(out, 0, size_t(bytes));
  for (int64_t p = 0; p < panels; ++p) {
    int8_t* panel = out + p * kp * kInt8PanelCols;
    for (int64_t j = 0; j < kInt8PanelCols && p * kInt8PanelCols + j < n; ++j) {
      const int64_t row = p * kInt8PanelCols + j;
      const int8_t* wr = w + row * w_rs;
      int32_t sum = 0;
      for (int64_t q = 0; q < k; ++q) {
        panel[(q / 4) * 4 * kInt8PanelCols + 4 * j + q % 4] = wr[q];
        sum += wr[q];
      }
      row_sums[row] = sum;
    }
  }
}

void gemm_int8(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_w,
               const Int8Epilogue& ep, float* c, int64_t ldc) {
  gemm_int8_detail::run(m, n, k, a, lda, packed_w, &ep, c, ldc);
}

void gemm_int8_s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, int64_t lda, const int8_t* packed_w,
                   int32_t* c, int64_t ldc) {
  gemm_int8_detail::run(m, n, k, a, lda, packed_w, nullptr, c, ldc);
}

void int8_gemm_rows(int64_t m, int64_t k, const uint8_t* a, int64_t a_rs, uint8_t flip, uint8_t* out,
                    int32_t* row_sums) {
  const int64_t kp = int8_padded_k(k);
  parallel_rows(m, m * k >= kParallelGrain, [&](int64_t r) {
    const uint8_t* src = a + r * a_rs;
    uint8_t* dst = out + r * kp;
    int32_t s = 0;
    for (int64_t q = 0; q < k; ++q) s += dst[q] = uint8_t(src[q] ^ flip);
    for (int64_t q = k; q < kp; ++q) dst[q] = 0;
    if (row_sums) row_sums[r] = s;
  });
}

void int8_apply_zero_points(int64_t m, int64_t n, int64_t k, const int32_t* za, const int32_t* zb,
                            const int32_t* row_sums, const int32_t* col_sums, int32_t* c) {
  // Unsigned arithmetic: the wrap int32 sums have, without signed overflow.
  parallel_rows(m, m * n >= kParallelGrain, [&](int64_t i) {
    const uint32_t zi = uint32_t(za[i]), ri = row_sums ? uint32_t(row_sums[i]) : 0;
    int32_t* row = c + i * n;
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t zj = uint32_t(zb[j]);
      row[j] = int32_t(uint32_t(row[j]) - zj * ri - zi * uint32_t(col_sums[j]) + uint32_t(k) * zi * zj);
    }
  });
}

const char* gemm_int8_kernel_name() { return gemm_int8_detail::kernel().name; }

}  // namespace ember::cpu
