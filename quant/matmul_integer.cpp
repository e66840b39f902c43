// matmul_integer (see matmul_integer.h). With a' = a + 128 for int8 a (uint8
// codes) and b' = b - 128 for uint8 b (int8 codes), zero points moved alike,
//   sum_p (a'_ip - za_i)(b'_pj - zb_j)
//     = sum_p a'_ip b'_pj - zb_j rowsum(a')_i - za_i colsum(b')_j + K za_i zb_j,
// so the kernel only ever sees uint8 x int8 products. The loops (flipping and
// padding a's rows, adding the zero-point terms in uint32 so that the sums wrap
// as ONNX's int32 sums do) are kernels/cpu/gemm_int8's.
#include "quant/matmul_integer.h"

#include <cstring>

#include "kernels/cpu/gemm_int8.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::quant {

struct PackedIntegerB {
  int64_t k = 0, n = 0;
  Tensor packed;    // int8, cpu::pack_int8_weights' layout of b'^T
  Tensor col_sums;  // int32 [n]: sum_p b'_pj
};

namespace {

// The products stay exact in the int8 kernel's int32 lanes up to this many terms.
constexpr int64_t kMaxKernelK = 65536;

void check_codes(const std::string& site, const char* name, const Tensor& t) {
  if (t.dtype() != kInt8 && t.dtype() != kUInt8)
    throw DTypeError(msg(site, ": ", name, " must be int8 or uint8, got ", t.dtype()));
}

void check_zero(const std::string& site, const char* name, const Tensor& zero, const Tensor& of) {
  if (zero.defined() && zero.dtype() != of.dtype())
    throw DTypeError(msg(site, ": the zero point of ", name, " must be ", of.dtype(), " like ", name, ", got ",
                         zero.dtype()));
}

// Packs the [k, n] codes of b (contiguous, on the host) as int8 b'^T.
PackedIntegerB pack_host(const Tensor& b) {
  PackedIntegerB p;
  p.k = b.size(0);
  p.n = b.size(1);
  const uint8_t flip = b.dtype() == kUInt8 ? 0x80 : 0;
  const auto* src = static_cast<const uint8_t*>(b.data_ptr());
  std::vector<int8_t> w(size_t(p.k * p.n));
  for (int64_t q = 0; q < p.k; ++q)
    for (int64_t j = 0; j < p.n; ++j) w[size_t(j * p.k + q)] = int8_t(uint8_t(src[q * p.n + j] ^ flip));
  p.packed = empty({cpu::packed_int8_weights_bytes(p.n, p.k)}, kInt8);
  p.col_sums = empty({p.n}, kInt32);
  cpu::pack_int8_weights(p.n, p.k, w.data(), p.k, p.packed.data_ptr<int8_t>(), p.col_sums.data_ptr<int32_t>());
  return p;
}

// A zero point as `target`'s shape (batch..., M, 1) or (batch..., 1, N), or
// undefined; `per` is the size one value per row or column would have.
Tensor shaped_zero(const std::string& site, const char* name, const Tensor& zero, const Shape& target, bool rows) {
  if (!zero.defined()) return zero;
  if (zero.numel() == 1) return zero.reshape({});
  const int64_t per = target[target.size() - (rows ? 2 : 1)];
  Tensor z = zero;
  if (zero.dim() == 1 && zero.size(0) == per) z = rows ? zero.reshape({per, 1}) : zero.reshape({1, per});
  // It must broadcast to `target` without growing it.
  bool fits = z.dim() <= int64_t(target.size());
  for (int64_t d = 1; fits && d <= z.dim(); ++d) {
    const int64_t have = z.size(-d), want = target[target.size() - size_t(d)];
    fits = have == 1 || have == want;
  }
  if (!fits)
    throw ShapeError(msg(site, ": the zero point of ", name, " must hold one value or one per ",
                         rows ? "row" : "column", ", got shape ", shape_str(zero.shape())));
  return z;
}

// The zero point values for every (batch, row) or (batch, column), as int32,
// moved by `shift` (the code flip of their operand).
std::vector<int32_t> zero_values(const Tensor& z, const Shape& target, int64_t count, int32_t shift) {
  std::vector<int32_t> v(size_t(count), shift);
  if (!z.defined()) return v;
  if (z.numel() == 1) {  // the common case, without a round of tensor ops
    const int32_t one = z.to(kCPU).to(kInt32).item<int32_t>();
    for (auto& e : v) e += one;
    return v;
  }
  std::vector<int32_t> given = z.to(kCPU, kInt32).expand(target).contiguous().reshape({count}).to_vector<int32_t>();
  for (int64_t i = 0; i < count; ++i) v[size_t(i)] += given[size_t(i)];
  return v;
}

Tensor float64_path(const Tensor& a, const Tensor& b, const Tensor& za, const Tensor& zb) {
  Tensor af = a.to(kFloat64), bf = b.to(kFloat64);
  if (za.defined()) af = sub(af, za.to(a.device(), kFloat64));
  if (zb.defined()) bf = sub(bf, zb.to(b.device(), kFloat64));
  // Each sum is an integer below 2^53 in magnitude, so exact; int64 -> int32 wraps.
  return matmul(af, bf).to(kInt64).to(kInt32);
}

}  // namespace

std::shared_ptr<const PackedIntegerB> pack_integer_b(const Tensor& b, const std::string& site) {
  check_codes(site, "b", b);
  if (b.dim() != 2) throw ShapeError(msg(site, ": a packed b must be 2-D, got shape ", shape_str(b.shape())));
  return std::make_shared<const PackedIntegerB>(pack_host(b.to(kCPU).contiguous()));
}

Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& a_zero, const Tensor& b_zero,
                      const std::string& site, const PackedIntegerB* packed) {
  check_codes(site, "a", a);
  check_codes(site, "b", b);
  check_zero(site, "a", a_zero, a);
  check_zero(site, "b", b_zero, b);
  check_same_device(a, b);
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError(msg(site, ": the operands must have at least one dim, got shapes ", shape_str(a.shape()), " and ",
                         shape_str(b.shape())));
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  const Tensor A = a_vec ? a.unsqueeze(0) : a, B = b_vec ? b.unsqueeze(1) : b;
  const int64_t M = A.size(-2), K = A.size(-1), N = B.size(-1);
  if (B.size(-2) != K)
    throw ShapeError(msg(site, ": cannot multiply shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  const Shape batch = broadcast_shapes(Shape(A.shape().begin(), A.shape().end() - 2),
                                       Shape(B.shape().begin(), B.shape().end() - 2));
  Shape rows_shape = batch, cols_shape = batch, out_shape = batch;
  rows_shape.insert(rows_shape.end(), {M, 1});
  cols_shape.insert(cols_shape.end(), {1, N});
  out_shape.insert(out_shape.end(), {M, N});
  const Tensor za = shaped_zero(site, "a", a_zero, rows_shape, true);
  const Tensor zb = shaped_zero(site, "b", b_zero, cols_shape, false);

  Tensor out;
  if (!a.device().is_cpu() || K > kMaxKernelK) {
    out = float64_path(A, B, za, zb);
  } else {
    int64_t batches = 1;
    for (int64_t s : batch) batches *= s;
    // The kernel writes every sum; with K = 0 they are all 0.
    out = K > 0 ? empty({batches, M, N}, kInt32) : zeros({batches, M, N}, kInt32);
    if (M > 0 && N > 0 && K > 0 && batches > 0) {
      const std::vector<int32_t> zav = zero_values(za, rows_shape, batches * M, a.dtype() == kInt8 ? 128 : 0);
      const std::vector<int32_t> zbv = zero_values(zb, cols_shape, batches * N, b.dtype() == kUInt8 ? -128 : 0);
      bool zb_zero = true;  // then a's row sums are not needed
      for (int32_t z : zbv) zb_zero = zb_zero && z == 0;
      // a' as rows padded to the kernel's groups of 4 bytes. A contiguous uint8 a
      // with K a multiple of 4 is that already; otherwise it is copied (and for
      // int8, flipped). Row sums only when some b zero point is not 0.
      const int64_t kp = cpu::int8_padded_k(K);
      Shape a_full = batch;
      a_full.insert(a_full.end(), {M, K});
      const Tensor ac = A.expand(a_full).contiguous();
      const auto* asrc = static_cast<const uint8_t*>(ac.data_ptr());
      const uint8_t a_flip = a.dtype() == kInt8 ? 0x80 : 0;
      std::vector<int32_t> row_sums(zb_zero ? 0 : size_t(batches * M));
      Tensor abuf;
      const uint8_t* ap = asrc;
      if (a_flip || kp != K || !zb_zero) {
        abuf = empty({batches * M, kp}, kUInt8);
        cpu::int8_gemm_rows(batches * M, K, asrc, K, a_flip, abuf.data_ptr<uint8_t>(),
                            zb_zero ? nullptr : row_sums.data());
        ap = abuf.data_ptr<uint8_t>();
      }
      // b' packed once when it has no batch dims, else per batch.
      std::vector<PackedIntegerB> own;
      if (!packed && B.dim() == 2) own.push_back(pack_host(B.contiguous()));
      Tensor bc;
      if (!packed && B.dim() > 2) {
        Shape b_full = batch;
        b_full.insert(b_full.end(), {K, N});
        bc = B.expand(b_full).contiguous().reshape({batches, K, N});
      }
      int32_t* o = out.data_ptr<int32_t>();
      for (int64_t t = 0; t < batches; ++t) {
        if (bc.defined()) {
          own.clear();
          own.push_back(pack_host(bc.select(0, t)));
        }
        const PackedIntegerB& pb = packed ? *packed : own.front();
        int32_t* ot = o + t * M * N;
        cpu::gemm_int8_s32(M, N, K, ap + t * M * kp, kp, pb.packed.data_ptr<int8_t>(), ot, N);
        cpu::int8_apply_zero_points(M, N, K, zav.data() + t * M, zbv.data() + t * N,
                                    zb_zero ? nullptr : row_sums.data() + t * M, pb.col_sums.data_ptr<int32_t>(), ot);
      }
    }
    out = out.reshape(out_shape);
  }
  if (a_vec) out = out.squeeze(-2);
  if (b_vec) out = out.squeeze(-1);
  return out;
}

}  // namespace ember::quant
