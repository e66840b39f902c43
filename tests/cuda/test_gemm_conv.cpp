// The CUDA GEMM and convolution kernels called directly (kernels/cuda/gemm.h and
// conv2d.h), each implementation on its own: the hand-written kernels (SIMT float32
// and float64, tensor-core float16 and bfloat16, im2col convolution) and the
// library paths (cuBLAS, cuDNN), against a float64 reference computed on the CPU;
// also the integer and int8 GEMMs, and sizes that pass the grid's 65535-block sides
// and the native convolution's 256 MiB column budget.
// EMBER_KERNELS is read once per process, so the native functions are called by
// name instead of through the environment. GEMMs are judged by the relative
// Frobenius norm of the error (docs/numerics.md, "CUDA against CPU"); plain float32
// must stay at float32 accuracy, so a path that silently used TF32 would fail.
#include <cmath>
#include <cstring>
#include <tuple>

#include "cuda/both.h"
#include "cuda/int8_sums.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemm_int8.h"
#include "kernels/cuda/runtime.h"
#include "nn/nn.h"
#include "quant/quant.h"
#include "tensor/cuda.h"

using namespace ember;
using cuda_test::Both;
using cuda_test::kCuda;
using ref::Layout;

namespace {

using GemmFn = void (*)(DType, int64_t, int64_t, int64_t, int64_t, double, const void*, int64_t, int64_t, int64_t,
                        const void*, int64_t, int64_t, int64_t, double, void*, int64_t, int64_t, int64_t,
                        cudaStream_t);

// How an operand matrix [batch, rows, cols] sits in memory: row-major, column-major,
// every other column, rows padded by 5 (an unaligned leading dimension: the
// tensor-core kernel packs it), and row- or column-major with the leading dimension
// rounded up to a multiple of 8 plus 8 (16-byte aligned: read in place, so a size
// that is not a multiple of 8 ends each row or column in a partial 16-byte chunk).
enum class Mem { rows, cols, stepped, padded, aligned_rows, aligned_cols };
const char* mem_name(Mem m) {
  switch (m) {
    case Mem::rows: return "row-major";
    case Mem::cols: return "column-major";
    case Mem::stepped: return "stepped columns";
    case Mem::padded: return "padded rows";
    case Mem::aligned_rows: return "row-major, leading dimension a multiple of 8";
    case Mem::aligned_cols: return "column-major, leading dimension a multiple of 8";
  }
  return "?";
}

int64_t aligned_ld(int64_t size) { return (size + 7) / 8 * 8 + 8; }

// A random [batch, r, c] operand on both devices, laid out as `m`.
Both operand(int64_t batch, int64_t r, int64_t c, DType dt, Mem m, std::mt19937_64& rng, double lo, double hi) {
  Shape base;
  switch (m) {
    case Mem::rows: base = {batch, r, c}; break;
    case Mem::cols: base = {batch, c, r}; break;
    case Mem::stepped: base = {batch, r, 2 * c}; break;
    case Mem::padded: base = {batch, r, c + 5}; break;
    case Mem::aligned_rows: base = {batch, r, aligned_ld(c)}; break;
    case Mem::aligned_cols: base = {batch, c, aligned_ld(r)}; break;
  }
  Both b;
  b.base_cpu = ref::make(base, dt, ref::random_values(ref::numel(base), dt, rng, lo, hi));
  b.base_gpu = b.base_cpu.to(kCuda);
  auto view = [&](const Tensor& t) {
    switch (m) {
      case Mem::rows: return t;
      case Mem::cols: return t.transpose(1, 2);
      case Mem::stepped: return t.slice(2, 0, std::nullopt, 2);
      case Mem::padded: return t.narrow(2, 2, c);
      case Mem::aligned_rows: return t.narrow(2, 0, c);
      case Mem::aligned_cols: return t.narrow(2, 0, r).transpose(1, 2);
    }
    return t;
  };
  b.cpu = view(b.base_cpu);
  b.gpu = view(b.base_gpu);
  return b;
}

// alpha * A.B + beta * C0 in float64, from the CPU copies, by plain loops.
std::vector<double> gemm_reference(const Tensor& a, const Tensor& b, const Tensor& c0, double alpha, double beta) {
  const ref::Array A = ref::read(a), B = ref::read(b), C = ref::read(c0);
  const int64_t batch = a.shape()[0], m = a.shape()[1], k = a.shape()[2], n = b.shape()[2];
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += A.v[(p * m + i) * k + q] * B.v[(p * k + q) * n + j];
        const size_t o = static_cast<size_t>((p * m + i) * n + j);
        out[o] = alpha * s + (beta == 0 ? 0.0 : beta * C.v[o]);
      }
  return out;
}

// ||got - want|| / ||want|| (Frobenius); NaN counts as infinite; 0 / 0 is 0.
double rel_norm_error(const Tensor& got, const std::vector<double>& want) {
  const ref::Array g = ref::read(got);
  REQUIRE(g.v.size() == want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = g.v[i] - want[i];
    if (std::isnan(d)) return INFINITY;
    num += d * d;
    den += want[i] * want[i];
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  return std::sqrt(num / den);
}

// The bound on the relative error norm of each dtype: float64 and float32 near
// their unit roundoff times sqrt(k); the half types dominated by rounding the result
// once to 11 (float16) or 8 (bfloat16) significant bits.
double gemm_bound(DType dt) {
  switch (dt) {
    case DType::Float64: return 1e-12;
    case DType::Float32: return 1e-5;
    case DType::Float16: return 1e-3;
    case DType::BFloat16: return 1e-2;
    default: return 0;
  }
}

struct Dims {
  int64_t m, n, k;
};

void wait_for_gpu() { cuda::synchronize(); }

}  // namespace

TEST_CASE("gemm_native and gemm_cublas match a float64 reference", "[cuda][gemm]") {
  const std::vector<Dims> sizes = {{1, 1, 1}, {17, 33, 65}, {128, 256, 64}, {513, 257, 129}, {64, 64, 1}, {5, 3, 300}};
  std::mt19937_64 rng(41);
  const cudaStream_t stream = cuda::stream(0);
  struct Impl {
    const char* name;
    GemmFn fn;
  };
  const Impl impls[] = {{"native", &cuda::gemm_native}, {"cuBLAS", &cuda::gemm_cublas}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Dims& d : sizes)
      for (Mem ma : {Mem::rows, Mem::cols, Mem::stepped, Mem::aligned_rows, Mem::aligned_cols})
        for (Mem mb : {Mem::rows, Mem::cols, Mem::padded, Mem::aligned_rows, Mem::aligned_cols})
          for (int ab = 0; ab < 2; ++ab) {
            const bool big = d.m * d.n * d.k > 1000000;
            if (big && !((ma == Mem::rows && mb == Mem::rows) || (ma == Mem::cols && mb == Mem::cols))) continue;
            const int64_t batch = big ? 1 : 3;
            const double alpha = ab ? 1.5 : 1.0, beta = ab ? 0.5 : 0.0;
            const Mem mc = ab ? Mem::padded : Mem::rows;
            const Both a = operand(batch, d.m, d.k, dt, ma, rng, -1, 1);
            const Both b = operand(batch, d.k, d.n, dt, mb, rng, -1, 1);
            const Both c0 = operand(batch, d.m, d.n, dt, mc, rng, -1, 1);
            const std::vector<double> want = gemm_reference(a.cpu, b.cpu, c0.cpu, alpha, beta);
            for (const Impl& impl : impls) {
              INFO(impl.name << " " << ref::str(dt) << " batch " << batch << " m " << d.m << " n " << d.n << " k "
                             << d.k << ", A " << mem_name(ma) << ", B " << mem_name(mb) << ", C " << mem_name(mc)
                             << ", alpha " << alpha << " beta " << beta);
              // C starts as c0, or as NaN when beta == 0: C must then never be read.
              Tensor base = c0.base_cpu.clone();
              if (beta == 0) base.fill_(NAN);
              Tensor cb = base.to(kCuda);
              Tensor c = mc == Mem::padded ? cb.narrow(2, 2, d.n) : cb;
              impl.fn(dt, batch, d.m, d.n, d.k, alpha, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1),
                      a.gpu.stride(2), b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), beta,
                      c.data_ptr(), c.stride(0), c.stride(1), c.stride(2), stream);
              wait_for_gpu();
              const double err = rel_norm_error(c.cpu(), want);
              INFO("relative error norm " << err);
              CHECK(err <= gemm_bound(dt));
              // Nothing outside C's view was written (the padding columns).
              if (mc == Mem::padded) {
                const Tensor after = cb.cpu();
                CHECK(ref::compare(after.narrow(2, 0, 2), ref::read(base.narrow(2, 0, 2)), cuda_test::kExact) == "");
                CHECK(ref::compare(after.narrow(2, d.n + 2, 3), ref::read(base.narrow(2, d.n + 2, 3)),
                                   cuda_test::kExact) == "");
              }
            }
            // The CPU's own matmul against the same reference.
            if (ab == 0 && (dt == kFloat32 || dt == kFloat64))
              CHECK(rel_norm_error(matmul(a.cpu, b.cpu), want) <= gemm_bound(dt));
          }
}

TEST_CASE("gemm: broadcast operands, k = 0 and empty products", "[cuda][gemm]") {
  std::mt19937_64 rng(42);
  const cudaStream_t stream = cuda::stream(0);
  for (GemmFn fn : {&cuda::gemm_native, &cuda::gemm_cublas})
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      INFO(ref::str(dt) << (fn == &cuda::gemm_native ? " native" : " cuBLAS"));
      // A shared by every batch entry (batch stride 0).
      const Both a = operand(1, 9, 20, dt, Mem::rows, rng, -1, 1);
      const Both b = operand(4, 20, 7, dt, Mem::cols, rng, -1, 1);
      Tensor c = zeros({4, 9, 7}, {dt, kCuda});
      fn(dt, 4, 9, 7, 20, 1.0, a.gpu.data_ptr(), 0, a.gpu.stride(1), a.gpu.stride(2), b.gpu.data_ptr(),
         b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), 0.0, c.data_ptr(), c.stride(0), c.stride(1), c.stride(2),
         stream);
      wait_for_gpu();
      CHECK(rel_norm_error(c.cpu(), gemm_reference(a.cpu.expand({4, 9, 20}), b.cpu, c.cpu(), 1.0, 0.0)) <=
            gemm_bound(dt));
      // k = 0: C = beta * C, and beta == 0 writes zeros over NaN.
      Tensor c2 = full({2, 3, 4}, 2.0, {dt, kCuda});
      fn(dt, 2, 3, 4, 0, 1.0, a.gpu.data_ptr(), 0, 1, 1, b.gpu.data_ptr(), 0, 1, 1, 0.25, c2.data_ptr(), 12, 4, 1,
         stream);
      wait_for_gpu();
      CHECK(ref::compare(c2.cpu(), ref::Array{{2, 3, 4}, std::vector<double>(24, 0.5)}, cuda_test::kExact) == "");
      Tensor c3 = full({2, 3, 4}, NAN, {dt, kCuda});
      fn(dt, 2, 3, 4, 0, 1.0, a.gpu.data_ptr(), 0, 1, 1, b.gpu.data_ptr(), 0, 1, 1, 0.0, c3.data_ptr(), 12, 4, 1,
         stream);
      wait_for_gpu();
      CHECK(ref::compare(c3.cpu(), ref::Array{{2, 3, 4}, std::vector<double>(24, 0.0)}, cuda_test::kExact) == "");
      // m, n or batch 0: nothing to do, nothing touched.
      fn(dt, 0, 3, 4, 5, 1.0, nullptr, 0, 1, 1, nullptr, 0, 1, 1, 0.0, nullptr, 12, 4, 1, stream);
      fn(dt, 2, 0, 4, 5, 1.0, nullptr, 0, 1, 1, nullptr, 0, 1, 1, 0.0, nullptr, 0, 4, 1, stream);
      wait_for_gpu();
    }
  // Which operands cuBLAS can describe: unit stride on one side of each matrix.
  CHECK(cuda::gemm_cublas_supports(1, 4, 5, 6, 24, 6, 1, 30, 5, 1, 20, 5, 1));
  CHECK(cuda::gemm_cublas_supports(2, 4, 5, 6, 24, 1, 4, 30, 1, 6, 20, 5, 1));
  CHECK_FALSE(cuda::gemm_cublas_supports(1, 4, 5, 6, 48, 12, 2, 30, 5, 1, 20, 5, 1));
  // Other dtypes are refused with NotImplementedError.
  Tensor i = zeros({2, 2}, {kInt32, kCuda});
  CHECK_THROWS_AS(cuda::gemm_native(kInt32, 1, 2, 2, 2, 1.0, i.data_ptr(), 4, 2, 1, i.data_ptr(), 4, 2, 1, 0.0,
                                    i.data_ptr(), 4, 2, 1, stream),
                  NotImplementedError);
}

TEST_CASE("gemm_integer is exact, wrapping in the element type", "[cuda][gemm]") {
  std::mt19937_64 rng(43);
  const cudaStream_t stream = cuda::stream(0);
  struct Range {
    DType dt;
    double lo, hi;
  };
  for (const Range& r : {Range{kInt8, -128, 127}, Range{kUInt8, 0, 255}, Range{kInt32, -60000, 60000},
                         Range{kInt64, -100000, 100000}})
    for (const Dims& d : {Dims{1, 1, 1}, Dims{17, 33, 65}, Dims{64, 32, 200}, Dims{3, 4, 0}})
      for (Mem ma : {Mem::rows, Mem::cols}) {
        INFO(ref::str(r.dt) << " m " << d.m << " n " << d.n << " k " << d.k << " A " << mem_name(ma));
        const Both a = operand(2, d.m, d.k, r.dt, ma, rng, r.lo, r.hi);
        const Both b = operand(2, d.k, d.n, r.dt, Mem::padded, rng, r.lo, r.hi);
        Tensor c = full({2, d.m, d.n}, 7, {r.dt, kCuda});
        cuda::gemm_integer(r.dt, 2, d.m, d.n, d.k, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1),
                           a.gpu.stride(2), b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2),
                           c.data_ptr(), c.stride(0), c.stride(1), c.stride(2), stream);
        wait_for_gpu();
        // Reference: int64 sums (no overflow at these ranges), wrapped to the type.
        const ref::Array A = ref::read(a.cpu), B = ref::read(b.cpu), C = ref::read(c.cpu());
        int64_t bad = 0;
        for (int64_t p = 0; p < 2; ++p)
          for (int64_t i = 0; i < d.m; ++i)
            for (int64_t j = 0; j < d.n; ++j) {
              int64_t s = 0;
              for (int64_t q = 0; q < d.k; ++q)
                s += static_cast<int64_t>(A.v[(p * d.m + i) * d.k + q]) * static_cast<int64_t>(B.v[(p * d.k + q) * d.n + j]);
              int64_t w = s;
              if (r.dt == kInt8) w = static_cast<int8_t>(s);
              if (r.dt == kUInt8) w = static_cast<uint8_t>(s);
              if (r.dt == kInt32) w = static_cast<int32_t>(s);
              if (static_cast<double>(w) != C.v[(p * d.m + i) * d.n + j]) ++bad;
            }
        CHECK(bad == 0);
      }
}

// ------------------------------------------- grids past their hardware limits ----
// A grid's y and z sides hold at most 65535 blocks; the GEMM launchers cap them there
// and the kernels loop over what does not fit. Each case below is sized to need more
// than 65535 blocks on the capped side, so that some blocks take a second tile or
// matrix, and is checked element by element (C starts as NaN where beta = 0, so a
// tile nobody computed shows).

TEST_CASE("batched GEMMs past 65535 matrices: native, cuBLAS and integer", "[cuda][gemm][grid]") {
  // 70000 > 65535: blocks with grid index below 70000 - 65535 = 4465 take a second
  // matrix (grid.z of the SIMT and integer kernels, grid.y of the tensor-core one).
  // A is [batch, 5, 8] row-major (16-byte aligned rows: the tensor-core kernel reads
  // it directly), B [batch, 8, 6] row-major (packed first): both of its paths.
  const int64_t batch = 70000, m = 5, n = 6, k = 8;
  std::mt19937_64 rng(45);
  const cudaStream_t stream = cuda::stream(0);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const Both a = operand(batch, m, k, dt, Mem::rows, rng, -1, 1);
    const Both b = operand(batch, k, n, dt, Mem::rows, rng, -1, 1);
    const Both c0 = operand(batch, m, n, dt, Mem::rows, rng, -1, 1);
    const std::vector<double> want = gemm_reference(a.cpu, b.cpu, c0.cpu, 1.5, 0.5);
    for (GemmFn fn : {&cuda::gemm_native, &cuda::gemm_cublas}) {
      INFO(ref::str(dt) << (fn == &cuda::gemm_native ? " native" : " cuBLAS") << ", batch " << batch);
      Tensor c = c0.gpu.clone();
      fn(dt, batch, m, n, k, 1.5, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1), a.gpu.stride(2),
         b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), 0.5, c.data_ptr(), c.stride(0),
         c.stride(1), c.stride(2), stream);
      wait_for_gpu();
      // Per matrix, so that a matrix left unwritten cannot hide in the norm of 70000.
      const ref::Array got = ref::read(c.cpu());
      int64_t bad = 0;
      for (int64_t p = 0; p < batch; ++p) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < m * n; ++i) {
          const double w = want[size_t(p * m * n + i)], d = got.v[size_t(p * m * n + i)] - w;
          num += std::isnan(d) ? INFINITY : d * d;
          den += w * w;
        }
        bad += !(std::sqrt(num / den) <= gemm_bound(dt));
      }
      CHECK(bad == 0);
    }
  }
  // The integer kernel: exact.
  const Both a = operand(batch, m, k, kInt32, Mem::rows, rng, -1000, 1000);
  const Both b = operand(batch, k, n, kInt32, Mem::cols, rng, -1000, 1000);
  Tensor c = full({batch, m, n}, 7, {kInt32, kCuda});
  cuda::gemm_integer(kInt32, batch, m, n, k, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1), a.gpu.stride(2),
                     b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), c.data_ptr(), c.stride(0),
                     c.stride(1), c.stride(2), stream);
  wait_for_gpu();
  // |sum| <= 8 * 10^6: exact in double, no wrap in int32.
  const std::vector<double> want = gemm_reference(a.cpu, b.cpu, c.cpu(), 1.0, 0.0);
  const ref::Array got = ref::read(c.cpu());
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += got.v[i] != want[i];
  CHECK(bad == 0);
}

TEST_CASE("gemm_integer with more than 65535 row tiles is exact", "[cuda][gemm][grid]") {
  // 16-row tiles: m = 65535 * 16 + 100 is 65542 tiles, 7 more than grid.y holds (the
  // launcher used to refuse this size). int8, k = 20 (two depth steps, the second
  // partial): 21 MB of A. Sums reach 20 * 128 * 128: they wrap in int8, as on the CPU.
  const int64_t m = 65535 * 16 + 100, n = 3, k = 20;
  std::mt19937_64 rng(46);
  std::uniform_int_distribution<int> u(-128, 127);
  Tensor a = empty({m, k}, kInt8), b = empty({k, n}, kInt8);
  int8_t* ap = a.data_ptr<int8_t>();
  int8_t* bp = b.data_ptr<int8_t>();
  for (int64_t i = 0; i < m * k; ++i) ap[i] = int8_t(u(rng));
  for (int64_t i = 0; i < k * n; ++i) bp[i] = int8_t(u(rng));
  const Tensor ad = a.to(kCuda), bd = b.to(kCuda);
  Tensor c = full({m, n}, 7, {kInt8, kCuda});
  cuda::gemm_integer(kInt8, 1, m, n, k, ad.data_ptr(), m * k, k, 1, bd.data_ptr(), k * n, n, 1, c.data_ptr(), m * n,
                     n, 1, cuda::stream(0));
  wait_for_gpu();
  const Tensor got = c.cpu();
  const int8_t* cp = got.data_ptr<int8_t>();
  int64_t bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t q = 0; q < k; ++q) s += int64_t(ap[i * k + q]) * bp[q * n + j];
      bad += cp[i * n + j] != static_cast<int8_t>(s);
    }
  CHECK(bad == 0);
}

TEST_CASE("the int8 GEMM and dynamic Linear with more than 65535 row tiles", "[cuda][gemm][grid][int8]") {
  // 32-row tiles: m = 2^21 + 64 = 2097216 rows is 65538 tiles, past grid.y's 65535
  // (the launch used to fail there). k = 16, n = 8 keep it cheap: 34 MB of uint8 A, 67
  // MB of int32 C; with this many tiles the depth is not split, so the direct store
  // (not the split-K atomics) is what runs.
  const int64_t m = (int64_t(1) << 21) + 64, n = 8, k = 16, kp = cuda::int8_padded_k16(k);
  std::mt19937 g(47);
  std::uniform_int_distribution<int> ua(0, 255), uw(-128, 127);
  Tensor a = empty({m, kp}, kUInt8), w = empty({n, kp}, kInt8);
  uint8_t* ap = a.data_ptr<uint8_t>();
  int8_t* wp = w.data_ptr<int8_t>();
  for (int64_t i = 0; i < m * kp; ++i) ap[i] = uint8_t(ua(g));
  for (int64_t i = 0; i < n * kp; ++i) wp[i] = int8_t(uw(g));
  CHECK(cuda_test::wrong_int8_sums(a, w, m, n, kp) == 0);

  // The whole layer at that batch against the CPU layer: same codes, same int32 sums,
  // only the float epilogue's rounding may differ (as tests/cuda/test_quant.cpp).
  manual_seed(48);
  nn::Linear lin(k, n, true);
  auto q_cpu = quant::DynamicQuantizedLinear::from_float(lin, quant::QScheme::PerChannel);
  auto q_cuda = quant::DynamicQuantizedLinear::from_float(lin, quant::QScheme::PerChannel);
  q_cuda->to(kCuda);
  const Tensor x = randn({m, k});
  const std::vector<float> want = (*q_cpu)(x).to_vector<float>();
  const std::vector<float> y = (*q_cuda)(x.to(kCuda)).to_vector<float>();
  REQUIRE(y.size() == want.size());
  double worst = 0, scale = 1e-3;
  for (float v : want) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, std::isnan(y[i]) ? INFINITY : double(std::abs(y[i] - want[i])));
  CHECK(worst <= 1e-5 * scale);
}

TEST_CASE("the tensor-core GEMM's grouped tile order with more than 8 tile rows", "[cuda][gemm][grid]") {
  // gemm_mma walks 128 x 128 tiles in bands of kGroupM = 8 tile rows. m = 1445 is 12
  // tile rows (one full band of 8, then a short band of 4 whose last tile is partial),
  // n = 300 is 3 tile columns: a wrong index map in either band leaves NaN tiles or
  // writes a tile twice with the wrong rows.
  const int64_t m = 1445, n = 300, k = 40;
  std::mt19937_64 rng(49);
  const cudaStream_t stream = cuda::stream(0);
  for (DType dt : {kFloat16, kBFloat16})
    for (Mem ma : {Mem::rows, Mem::cols}) {
      INFO(ref::str(dt) << " A " << mem_name(ma));
      const Both a = operand(1, m, k, dt, ma, rng, -1, 1);
      const Both b = operand(1, k, n, dt, Mem::rows, rng, -1, 1);
      Tensor c = full({1, m, n}, NAN, {dt, kCuda});
      cuda::gemm_native(dt, 1, m, n, k, 1.0, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1), a.gpu.stride(2),
                        b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), 0.0, c.data_ptr(),
                        c.stride(0), c.stride(1), c.stride(2), stream);
      wait_for_gpu();
      const std::vector<double> want = gemm_reference(a.cpu, b.cpu, c.cpu(), 1.0, 0.0);
      // Per tile (128 x 128), so that one wrong tile among 36 cannot hide in the norm.
      const ref::Array got = ref::read(c.cpu());
      int64_t bad_tiles = 0;
      for (int64_t ti = 0; ti < m; ti += 128)
        for (int64_t tj = 0; tj < n; tj += 128) {
          double num = 0, den = 0;
          for (int64_t i = ti; i < std::min(m, ti + 128); ++i)
            for (int64_t j = tj; j < std::min(n, tj + 128); ++j) {
              const double w = want[size_t(i * n + j)], d = got.v[size_t(i * n + j)] - w;
              num += std::isnan(d) ? INFINITY : d * d;
              den += w * w;
            }
          bad_tiles += !(std::sqrt(num / den) <= gemm_bound(dt));
        }
      CHECK(bad_tiles == 0);
    }
}

namespace {

const char* kernel_name(GemmFn fn) {
  return fn == &cuda::gemm_mma_sync ? "mma.sync" : fn == &cuda::gemm_wgmma ? "wgmma (cp.async)" : "wgmma (bulk copies)";
}

// The half-type GEMM kernels called by name against a float64 reference. Sizes: one
// exact 128 x 256 tile, tiles cut in m, n and k (k = 1000 is 15 panels of 64 plus 40,
// past the 4-stage ring), single rows and columns; B row-major (n-contiguous, wgmma's
// transposed B) and column-major (k-contiguous); alpha and beta with C in a padded
// view, whose padding must stay untouched. A wgmma kernel off Hopper must refuse.
void check_half_gemms(std::initializer_list<GemmFn> fns, uint64_t seed) {
  const std::vector<Dims> sizes = {{128, 256, 64}, {300, 520, 200}, {1, 8, 8}, {257, 255, 1000}, {640, 24, 16}};
  std::mt19937_64 rng(seed);
  const cudaStream_t stream = cuda::stream(0);
  const bool hopper = cuda::wgmma_available();
  for (DType dt : {kFloat16, kBFloat16})
    for (const Dims& d : sizes)
      for (Mem mb : {Mem::aligned_rows, Mem::aligned_cols})
        for (int ab = 0; ab < 2; ++ab) {
          const int64_t batch = d.m * d.n * d.k > 1000000 ? 1 : 2;
          const double alpha = ab ? 1.5 : 1.0, beta = ab ? 0.5 : 0.0;
          const Both a = operand(batch, d.m, d.k, dt, Mem::aligned_rows, rng, -1, 1);
          const Both b = operand(batch, d.k, d.n, dt, mb, rng, -1, 1);
          const Both c0 = operand(batch, d.m, d.n, dt, Mem::padded, rng, -1, 1);
          const std::vector<double> want = gemm_reference(a.cpu, b.cpu, c0.cpu, alpha, beta);
          for (GemmFn fn : fns) {
            INFO(kernel_name(fn) << " " << ref::str(dt) << " batch " << batch << " m " << d.m << " n " << d.n << " k "
                                 << d.k << ", B " << mem_name(mb) << ", alpha " << alpha << " beta " << beta);
            Tensor base = c0.base_cpu.clone();
            if (beta == 0) base.fill_(NAN);
            Tensor cb = base.to(kCuda);
            Tensor c = cb.narrow(2, 2, d.n);
            auto call = [&] {
              fn(dt, batch, d.m, d.n, d.k, alpha, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1), a.gpu.stride(2),
                 b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), beta, c.data_ptr(),
                 c.stride(0), c.stride(1), c.stride(2), stream);
            };
            if (fn != &cuda::gemm_mma_sync && !hopper) {
              CHECK_THROWS_AS(call(), ValueError);
              continue;
            }
            const int64_t launches = cuda::gemm_wgmma_tma_launches();
            call();
            wait_for_gpu();
            // The bulk-copy entry must have run its own kernel, not the cp.async fallback.
            if (fn == &cuda::gemm_wgmma_tma) CHECK(cuda::gemm_wgmma_tma_launches() == launches + 1);
            const double err = rel_norm_error(c.cpu(), want);
            INFO("relative error norm " << err);
            CHECK(err <= gemm_bound(dt));
            const Tensor after = cb.cpu();
            CHECK(ref::compare(after.narrow(2, 0, 2), ref::read(base.narrow(2, 0, 2)), cuda_test::kExact) == "");
            CHECK(ref::compare(after.narrow(2, d.n + 2, 3), ref::read(base.narrow(2, d.n + 2, 3)), cuda_test::kExact) ==
                  "");
          }
        }
  // A broadcast A (batch stride 0): no tensor map describes it, so the bulk-copy
  // kernel hands it to the cp.async one.
  if (!hopper) return;
  const Both a1 = operand(1, 200, 72, kBFloat16, Mem::aligned_rows, rng, -1, 1);
  const Both b2 = operand(2, 72, 136, kBFloat16, Mem::aligned_rows, rng, -1, 1);
  for (GemmFn fn : fns) {
    INFO(kernel_name(fn) << ", A broadcast over a batch of 2");
    Tensor c = full({2, 200, 136}, NAN, {kBFloat16, kCuda});
    const int64_t launches = cuda::gemm_wgmma_tma_launches();
    fn(kBFloat16, 2, 200, 136, 72, 1.0, a1.gpu.data_ptr(), 0, a1.gpu.stride(1), 1, b2.gpu.data_ptr(), b2.gpu.stride(0),
       b2.gpu.stride(1), 1, 0.0, c.data_ptr(), 200 * 136, 136, 1, stream);
    wait_for_gpu();
    CHECK(cuda::gemm_wgmma_tma_launches() == launches);  // the cp.async kernel took it
    CHECK(rel_norm_error(c.cpu(), gemm_reference(a1.cpu.expand({2, 200, 72}), b2.cpu, c.cpu(), 1.0, 0.0)) <=
          gemm_bound(kBFloat16));
  }
}

}  // namespace

TEST_CASE("the Hopper wgmma GEMM and the mma.sync GEMM each match a float64 reference", "[cuda][gemm][wgmma]") {
  // gemm_native sends qualifying half-type products to gemm_wgmma on a compute
  // capability 9.0 GPU, so each kernel is also called by name here: the mma.sync one
  // on every GPU, the wgmma one where it runs.
  if (!cuda::wgmma_available())
    WARN("no compute capability 9.0 device running sm_90a code: gemm_wgmma is checked for its refusal only");
  check_half_gemms({&cuda::gemm_mma_sync, &cuda::gemm_wgmma}, 53);
  // Layouts the wgmma kernel does not read are refused, not misread.
  std::mt19937_64 rng(54);
  const Both a = operand(1, 16, 16, kFloat16, Mem::cols, rng, -1, 1);
  const Both b = operand(1, 16, 16, kFloat16, Mem::rows, rng, -1, 1);
  CHECK_FALSE(cuda::gemm_wgmma_supports(kFloat16, 1, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1),
                                        a.gpu.stride(2), b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1),
                                        b.gpu.stride(2)));
  CHECK_FALSE(cuda::gemm_wgmma_supports(kFloat32, 1, b.gpu.data_ptr(), 256, 16, 1, b.gpu.data_ptr(), 256, 16, 1));
}

// ------------------------------------------------------------------ conv2d ----

namespace {

struct ConvFns {
  const char* name;
  decltype(&cuda::conv2d_forward_native) forward;
  decltype(&cuda::conv2d_backward_input_native) backward_input;
  decltype(&cuda::conv2d_backward_weight_native) backward_weight;
};

// allowed[i] = rtol * |want[i]| + k * magnitude[i], as in test_nn_ops.cpp.
std::string conv_diff(const Tensor& got_gpu, const Tensor& want64, const Tensor& magnitude, DType dt) {
  const double k = dt == kFloat64 ? 1e-13 : dt == kFloat32 ? 1e-5 : dt == kFloat16 ? 1e-3 : 8e-3;
  const ref::Tol tol = cuda_test::tol_for(dt);
  const ref::Array w = ref::read(want64), m = ref::read(magnitude);
  std::vector<double> allowed(w.v.size());
  for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = tol.atol + tol.rtol * std::fabs(w.v[i]) + k * m.v[i];
  return ref::compare_within(got_gpu.cpu(), w, allowed);
}

// Each implementation against the CPU convolution in float64, on shapes covering
// stride, padding, dilation, groups, 1x1, the seed network's layers and kernel rows
// wider than the direct weight gradient's 8 taps per thread.
void check_conv_impls(const std::vector<ConvFns>& impls, uint64_t seed) {
  auto shape = [](int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, int64_t kh, int64_t kw, int64_t sh,
                  int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t g) {
    Conv2dShape s;
    s.n = n, s.c_in = ci, s.h = h, s.w = w, s.c_out = co, s.kh = kh, s.kw = kw;
    s.stride_h = sh, s.stride_w = sw, s.pad_h = ph, s.pad_w = pw, s.dil_h = dh, s.dil_w = dw, s.groups = g;
    return conv2d_set_output_size(s);
  };
  const std::vector<Conv2dShape> cases = {
      shape(2, 4, 9, 11, 6, 3, 3, 1, 1, 0, 0, 1, 1, 1),   shape(2, 4, 9, 11, 6, 3, 3, 2, 1, 1, 2, 1, 1, 1),
      shape(2, 4, 9, 11, 6, 3, 2, 1, 2, 2, 1, 2, 1, 1),   shape(2, 6, 8, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3),
      shape(1, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 8),    shape(3, 5, 6, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1),
      shape(16, 1, 28, 28, 6, 5, 5, 1, 1, 0, 0, 1, 1, 1), shape(16, 6, 12, 12, 12, 5, 5, 1, 1, 0, 0, 1, 1, 1),
      shape(4, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1), shape(1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1),
      // Kernel rows wider than the direct weight gradient's 8 taps per thread.
      shape(2, 3, 4, 13, 2, 1, 11, 1, 1, 0, 5, 1, 1, 1), shape(2, 4, 5, 40, 4, 2, 17, 1, 2, 1, 3, 1, 2, 2),
  };
  std::mt19937_64 rng(seed);
  const cudaStream_t stream = cuda::stream(0);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const Conv2dShape& s : cases)
      for (const ConvFns& impl : impls) {
        INFO(impl.name << " " << ref::str(dt) << " n " << s.n << " c_in " << s.c_in << " " << s.h << "x" << s.w
                       << " c_out " << s.c_out << " kernel " << s.kh << "x" << s.kw << " stride " << s.stride_h << ","
                       << s.stride_w << " pad " << s.pad_h << "," << s.pad_w << " dil " << s.dil_h << "," << s.dil_w
                       << " groups " << s.groups);
        const Shape xs{s.n, s.c_in, s.h, s.w}, ws{s.c_out, s.c_in / s.groups, s.kh, s.kw}, ys{s.n, s.c_out, s.h_out, s.w_out};
        const Both x = cuda_test::random_both(xs, dt, Layout::contiguous, rng, -1, 1);
        const Both w = cuda_test::random_both(ws, dt, Layout::contiguous, rng, -1, 1);
        const Both b = cuda_test::random_both({s.c_out}, dt, Layout::contiguous, rng, -1, 1);
        const Both gy = cuda_test::random_both(ys, dt, Layout::contiguous, rng, -1, 1);
        const Pair st{s.stride_h, s.stride_w}, pd{s.pad_h, s.pad_w}, dl{s.dil_h, s.dil_w};
        auto f64 = [](const Tensor& t) { return t.to(kFloat64); };
        auto a64 = [](const Tensor& t) { return t.to(kFloat64).abs(); };

        Tensor y = full(ys, NAN, {dt, kCuda});
        impl.forward(dt, s, x.gpu.data_ptr(), w.gpu.data_ptr(), b.gpu.data_ptr(), y.data_ptr(), stream);
        wait_for_gpu();
        CHECK(conv_diff(y, conv2d(f64(x.cpu), f64(w.cpu), f64(b.cpu), st, pd, dl, s.groups),
                        conv2d(a64(x.cpu), a64(w.cpu), a64(b.cpu), st, pd, dl, s.groups), dt) == "");
        // Without bias.
        impl.forward(dt, s, x.gpu.data_ptr(), w.gpu.data_ptr(), nullptr, y.data_ptr(), stream);
        wait_for_gpu();
        CHECK(conv_diff(y, conv2d(f64(x.cpu), f64(w.cpu), Tensor(), st, pd, dl, s.groups),
                        conv2d(a64(x.cpu), a64(w.cpu), Tensor(), st, pd, dl, s.groups), dt) == "");

        Tensor gx = full(xs, NAN, {dt, kCuda});
        impl.backward_input(dt, s, gy.gpu.data_ptr(), w.gpu.data_ptr(), gx.data_ptr(), stream);
        wait_for_gpu();
        CHECK(conv_diff(gx, conv2d_backward_input(f64(gy.cpu), f64(w.cpu), xs, st, pd, dl, s.groups),
                        conv2d_backward_input(a64(gy.cpu), a64(w.cpu), xs, st, pd, dl, s.groups), dt) == "");

        Tensor gw = full(ws, NAN, {dt, kCuda}), gb = full({s.c_out}, NAN, {dt, kCuda});
        impl.backward_weight(dt, s, gy.gpu.data_ptr(), x.gpu.data_ptr(), gw.data_ptr(), gb.data_ptr(), stream);
        wait_for_gpu();
        auto [rw, rb] = conv2d_backward_weight(f64(gy.cpu), f64(x.cpu), ws, st, pd, dl, s.groups, true);
        auto [mw, mb] = conv2d_backward_weight(a64(gy.cpu), a64(x.cpu), ws, st, pd, dl, s.groups, true);
        CHECK(conv_diff(gw, rw, mw, dt) == "");
        CHECK(conv_diff(gb, rb, mb, dt) == "");
        // grad_bias may be skipped (a fresh output: every element must be written).
        gw = full(ws, NAN, {dt, kCuda});
        impl.backward_weight(dt, s, gy.gpu.data_ptr(), x.gpu.data_ptr(), gw.data_ptr(), nullptr, stream);
        wait_for_gpu();
        CHECK(conv_diff(gw, rw, mw, dt) == "");
      }
}

}  // namespace

TEST_CASE("conv2d native and cuDNN kernels match the CPU in float64", "[cuda][conv2d]") {
  std::vector<ConvFns> impls = {{"native", &cuda::conv2d_forward_native, &cuda::conv2d_backward_input_native,
                                 &cuda::conv2d_backward_weight_native}};
  if (cuda::conv2d_have_cudnn())
    impls.push_back({"cuDNN", &cuda::conv2d_forward_cudnn, &cuda::conv2d_backward_input_cudnn,
                     &cuda::conv2d_backward_weight_cudnn});
  else
    WARN("this build has no cuDNN: only the native convolution is tested");
  check_conv_impls(impls, 44);
}

namespace {

using ForwardFn = decltype(&cuda::conv2d_forward);

void check_bias_rounds_once(const std::vector<std::pair<const char*, ForwardFn>>& impls) {
  // Integer inputs make the float32 sums exact (|sum| <= 18 * 32 * 32 = 18432 < 2^24,
  // products of integers below 2^5 exact in TF32 too); the bias k + 0.5 makes every
  // result need rounding. x, w in [12, 32] put every sum past 2048 (18 * 144 = 2592),
  // where float16's spacing is at least 2 (bfloat16's is past 256): rounding points
  // are then integers and every exact result lies 0.5 from them, so an algorithm's
  // float32 error (Winograd, FFT: far below 0.5 at 18432) cannot change the result.
  // Rounding the convolution first and the sum again gives different values for a
  // share of the outputs (counted below, so the test is known to tell them apart).
  Conv2dShape s;
  s.n = 2, s.c_in = 2, s.h = 7, s.w = 6, s.c_out = 4, s.kh = 3, s.kw = 3;
  s.stride_h = s.stride_w = 1, s.pad_h = s.pad_w = 0, s.dil_h = s.dil_w = 1, s.groups = 1;
  s = conv2d_set_output_size(s);
  const Shape xs{s.n, s.c_in, s.h, s.w}, ws{s.c_out, s.c_in, s.kh, s.kw}, ys{s.n, s.c_out, s.h_out, s.w_out};
  std::mt19937_64 rng(50);
  std::uniform_int_distribution<int> u(12, 32), ub(-8, 7);
  auto ints = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = u(rng);
    return v;
  };
  const Tensor x64 = ref::make(xs, kFloat64, ints(ref::numel(xs)));
  const Tensor w64 = ref::make(ws, kFloat64, ints(ref::numel(ws)));
  std::vector<double> bv(size_t(s.c_out));
  for (double& e : bv) e = ub(rng) + 0.5;
  const Tensor b64 = ref::make({s.c_out}, kFloat64, bv);
  const Tensor conv64 = conv2d(x64, w64, Tensor(), Pair{1, 1}, Pair{0, 0}, Pair{1, 1}, 1);  // exact
  const cudaStream_t stream = cuda::stream(0);
  for (DType dt : {kFloat16, kBFloat16}) {
    const Tensor once = (conv64 + b64.reshape({1, s.c_out, 1, 1})).to(dt);
    const Tensor twice = (conv64.to(dt).to(kFloat64) + b64.reshape({1, s.c_out, 1, 1})).to(dt);
    const ref::Array o = ref::read(once), t = ref::read(twice);
    int64_t differ = 0;
    for (size_t i = 0; i < o.v.size(); ++i) differ += o.v[i] != t.v[i];
    INFO(ref::str(dt) << ": " << differ << " of " << o.v.size() << " outputs differ when rounded twice");
    REQUIRE(differ > 0);
    const Tensor x = x64.to(dt).to(kCuda), w = w64.to(dt).to(kCuda), b = b64.to(dt).to(kCuda);
    for (const auto& [name, fn] : impls) {
      INFO(name);
      Tensor y = full(ys, NAN, {dt, kCuda});
      fn(dt, s, x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), stream);
      wait_for_gpu();
      CHECK(ref::compare(y.cpu(), o, cuda_test::kExact) == "");
    }
  }
}

}  // namespace

TEST_CASE("conv2d forward with a bias rounds the half types once, on every path", "[cuda][conv2d]") {
  std::vector<std::pair<const char*, ForwardFn>> impls = {{"native", &cuda::conv2d_forward_native},
                                                          {"default", &cuda::conv2d_forward}};
  if (cuda::conv2d_have_cudnn()) impls.push_back({"cuDNN", &cuda::conv2d_forward_cudnn});
  check_bias_rounds_once(impls);
}

TEST_CASE("native conv2d in several im2col chunks matches the CPU", "[cuda][conv2d]") {
  // conv2d.cu caps one chunk's column matrix at kMaxColumnBytes = 256 MiB (268435456
  // bytes). Here CK = c_in * kh * kw = 16 * 9 = 144 and P = 400 * 400 = 160000, so one
  // image's columns are 144 * 160000 * 4 = 92160000 bytes in float32: chunks of 2
  // images, the batch of 3 in two chunks (2 + 1); the weight gradient's per-image
  // share, (144 + c_out) * 160000 * 4 = 94720000 bytes, also gives chunks of 2, so its
  // second chunk adds onto the first with beta = 1. In float64 everything is twice as
  // large: chunks of one image, three of them. (The half types would fit the batch in
  // one chunk at this size.) The same float32 values feed both dtypes, so one float64
  // reference serves both.
  Conv2dShape s;
  s.n = 3, s.c_in = 16, s.h = 400, s.w = 400, s.c_out = 4, s.kh = 3, s.kw = 3;
  s.stride_h = s.stride_w = 1, s.pad_h = s.pad_w = 1, s.dil_h = s.dil_w = 1, s.groups = 1;
  s = conv2d_set_output_size(s);
  REQUIRE(s.h_out * s.w_out == 160000);
  const Shape xs{s.n, s.c_in, s.h, s.w}, ws{s.c_out, s.c_in, s.kh, s.kw}, ys{s.n, s.c_out, s.h_out, s.w_out};
  std::mt19937_64 rng(51);
  auto values = [&](const Shape& sh) {
    return ref::make(sh, kFloat32, ref::random_values(ref::numel(sh), kFloat32, rng, -1, 1));
  };
  const Tensor x32 = values(xs), w32 = values(ws), b32 = values({s.c_out}), gy32 = values(ys);
  auto f64 = [](const Tensor& t) { return t.to(kFloat64); };
  auto a64 = [](const Tensor& t) { return t.to(kFloat64).abs(); };
  const Pair st{1, 1}, pd{1, 1}, dl{1, 1};
  const Tensor ry = conv2d(f64(x32), f64(w32), f64(b32), st, pd, dl, 1);
  const Tensor my = conv2d(a64(x32), a64(w32), a64(b32), st, pd, dl, 1);
  const Tensor rx = conv2d_backward_input(f64(gy32), f64(w32), xs, st, pd, dl, 1);
  const Tensor mx = conv2d_backward_input(a64(gy32), a64(w32), xs, st, pd, dl, 1);
  auto [rw, rb] = conv2d_backward_weight(f64(gy32), f64(x32), ws, st, pd, dl, 1, true);
  auto [mw, mb] = conv2d_backward_weight(a64(gy32), a64(x32), ws, st, pd, dl, 1, true);
  const cudaStream_t stream = cuda::stream(0);
  for (DType dt : {kFloat32, kFloat64}) {
    INFO(ref::str(dt));
    const Tensor x = x32.to(dt).to(kCuda), w = w32.to(dt).to(kCuda), b = b32.to(dt).to(kCuda);
    const Tensor gy = gy32.to(dt).to(kCuda);
    Tensor y = full(ys, NAN, {dt, kCuda});
    cuda::conv2d_forward_native(dt, s, x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), stream);
    wait_for_gpu();
    CHECK(conv_diff(y, ry, my, dt) == "");
    Tensor gx = full(xs, NAN, {dt, kCuda});
    cuda::conv2d_backward_input_native(dt, s, gy.data_ptr(), w.data_ptr(), gx.data_ptr(), stream);
    wait_for_gpu();
    CHECK(conv_diff(gx, rx, mx, dt) == "");
    Tensor gw = full(ws, NAN, {dt, kCuda}), gb = full({s.c_out}, NAN, {dt, kCuda});
    cuda::conv2d_backward_weight_native(dt, s, gy.data_ptr(), x.data_ptr(), gw.data_ptr(), gb.data_ptr(), stream);
    wait_for_gpu();
    CHECK(conv_diff(gw, rw, mw, dt) == "");
    CHECK(conv_diff(gb, rb, mb, dt) == "");
  }
}

// The direct kernels were written after the one GPU run so far: near the end, so that
// a fault of theirs (which ends the program) leaves every earlier case's result.
TEST_CASE("conv2d direct kernels match the CPU in float64", "[cuda][conv2d][direct]") {
  check_conv_impls({{"direct", &cuda::conv2d_forward_direct, &cuda::conv2d_backward_input_direct,
                     &cuda::conv2d_backward_weight_direct}},
                   45);
  check_bias_rounds_once({{"direct", &cuda::conv2d_forward_direct}});
  // Integer dtypes are refused with the native path's message, also for an empty batch.
  Conv2dShape s;
  s.n = 0, s.c_in = 1, s.h = s.w = 4, s.c_out = 1, s.kh = s.kw = 3;
  s = conv2d_set_output_size(s);
  for (auto fn : {&cuda::conv2d_forward_native, &cuda::conv2d_forward_direct})
    CHECK_THROWS_WITH(fn(kInt32, s, nullptr, nullptr, nullptr, nullptr, cuda::stream(0)),
                      "conv2d_forward: not implemented for dtype int32 on cuda");
  CHECK_THROWS_WITH(cuda::conv2d_backward_weight_direct(kInt64, s, nullptr, nullptr, nullptr, nullptr, cuda::stream(0)),
                    "conv2d_backward_weight: not implemented for dtype int64 on cuda");
}

TEST_CASE("conv2d direct kernels at the seed network's batch 1000 match the CPU", "[cuda][conv2d][direct]") {
  // The training shapes: conv1's weight gradient sums 576,000 positions per weight in
  // 18,000 parts of 32 (two waves of an H200), conv2's 64,000 in about 1,500. Float64
  // as well, where the allowed error (about 1e-8 of the sum of |terms|) would show a
  // part of 32 terms left out or counted twice; float32's bound might not.
  for (const auto& [ci, hw, co, dt] : {std::tuple{1, 28, 6, kFloat32}, std::tuple{6, 12, 12, kFloat32},
                                       std::tuple{1, 28, 6, kFloat64}, std::tuple{6, 12, 12, kFloat64}}) {
    Conv2dShape s;
    s.n = 1000, s.c_in = ci, s.h = s.w = hw, s.c_out = co, s.kh = s.kw = 5;
    s = conv2d_set_output_size(s);
    INFO(ref::str(dt) << ", c_in " << ci << ", " << hw << "x" << hw << ", c_out " << co);
    const Shape xs{s.n, s.c_in, s.h, s.w}, ws{s.c_out, s.c_in, s.kh, s.kw}, ys{s.n, s.c_out, s.h_out, s.w_out};
    std::mt19937_64 rng(52);
    auto values = [&](const Shape& sh) {
      return ref::make(sh, kFloat32, ref::random_values(ref::numel(sh), kFloat32, rng, -1, 1));
    };
    const Tensor x32 = values(xs), w32 = values(ws), b32 = values({s.c_out}), gy32 = values(ys);
    auto f64 = [](const Tensor& t) { return t.to(kFloat64); };
    auto a64 = [](const Tensor& t) { return t.to(kFloat64).abs(); };
    const Pair st{1, 1}, pd{0, 0}, dl{1, 1};
    const cudaStream_t stream = cuda::stream(0);
    const Tensor x = x32.to(dt).to(kCuda), w = w32.to(dt).to(kCuda), b = b32.to(dt).to(kCuda),
                 gy = gy32.to(dt).to(kCuda);
    Tensor y = full(ys, NAN, {dt, kCuda});
    cuda::conv2d_forward_direct(dt, s, x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(), stream);
    wait_for_gpu();
    CHECK(conv_diff(y, conv2d(f64(x32), f64(w32), f64(b32), st, pd, dl, 1),
                    conv2d(a64(x32), a64(w32), a64(b32), st, pd, dl, 1), dt) == "");
    Tensor gx = full(xs, NAN, {dt, kCuda});
    cuda::conv2d_backward_input_direct(dt, s, gy.data_ptr(), w.data_ptr(), gx.data_ptr(), stream);
    wait_for_gpu();
    CHECK(conv_diff(gx, conv2d_backward_input(f64(gy32), f64(w32), xs, st, pd, dl, 1),
                    conv2d_backward_input(a64(gy32), a64(w32), xs, st, pd, dl, 1), dt) == "");
    Tensor gw = full(ws, NAN, {dt, kCuda}), gb = full({s.c_out}, NAN, {dt, kCuda});
    cuda::conv2d_backward_weight_direct(dt, s, gy.data_ptr(), x.data_ptr(), gw.data_ptr(), gb.data_ptr(),
                                        stream);
    wait_for_gpu();
    auto [rw, rb] = conv2d_backward_weight(f64(gy32), f64(x32), ws, st, pd, dl, 1, true);
    auto [mw, mb] = conv2d_backward_weight(a64(gy32), a64(x32), ws, st, pd, dl, 1, true);
    CHECK(conv_diff(gw, rw, mw, dt) == "");
    CHECK(conv_diff(gb, rb, mb, dt) == "");
    // Same bits on a second run, without the bias gradient: no atomics, a fixed order,
    // and the parts do not depend on the bias rows.
    Tensor gw2 = full(ws, NAN, {dt, kCuda});
    cuda::conv2d_backward_weight_direct(dt, s, gy.data_ptr(), x.data_ptr(), gw2.data_ptr(), nullptr, stream);
    wait_for_gpu();
    CHECK(ref::compare(gw2.cpu(), ref::read(gw.cpu()), cuda_test::kExact) == "");
  }
}

// Last in the file: the bulk-copy wgmma kernel has not run on a GPU yet, and if its
// mbarrier handshake were wrong it would stop at its 10 s watchdog with a launch
// failure that ends this program; every other case above has run by then.
TEST_CASE("the bulk-copy (TMA) wgmma GEMM matches a float64 reference", "[cuda][gemm][wgmma][tma]") {
  check_half_gemms({&cuda::gemm_wgmma_tma}, 59);
  if (!cuda::wgmma_available()) return;
  // 65537 matrices: the grid's second side stops at 65535, so two blocks each take two
  // batch entries and carry their mbarrier phases from one matrix to the next.
  std::mt19937_64 rng(61);
  const int64_t batch = 65537, m = 16, n = 16, k = 16;
  const cudaStream_t stream = cuda::stream(0);
  for (Mem mb : {Mem::aligned_rows, Mem::aligned_cols}) {
    INFO("batch " << batch << ", B " << mem_name(mb));
    const Both a = operand(batch, m, k, kFloat16, Mem::aligned_rows, rng, -1, 1);
    const Both b = operand(batch, k, n, kFloat16, mb, rng, -1, 1);
    Tensor c = full({batch, m, n}, NAN, {kFloat16, kCuda});
    const int64_t launches = cuda::gemm_wgmma_tma_launches();
    cuda::gemm_wgmma_tma(kFloat16, batch, m, n, k, 1.0, a.gpu.data_ptr(), a.gpu.stride(0), a.gpu.stride(1),
                         a.gpu.stride(2), b.gpu.data_ptr(), b.gpu.stride(0), b.gpu.stride(1), b.gpu.stride(2), 0.0,
                         c.data_ptr(), m * n, n, 1, stream);
    wait_for_gpu();
    CHECK(cuda::gemm_wgmma_tma_launches() == launches + 1);
    CHECK(rel_norm_error(c.cpu(), gemm_reference(a.cpu, b.cpu, c.cpu(), 1.0, 0.0)) <= gemm_bound(kFloat16));
  }
}
