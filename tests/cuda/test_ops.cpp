// Every tensor op on CUDA against the same op on the CPU: the 12 unary and 13 binary
// ops (tensor, scalar and in-place forms, with PyTorch's type promotion), where,
// clamp, fill_ of views, every dtype conversion, the reductions, softmax and
// log_softmax, cat and stack, and rand/randn. Inputs are random, in every dtype the op takes, over 0-dim,
// 0-size, 1-size, broadcast and non-contiguous (transposed, stepped slice, expanded,
// permuted) shapes; the CUDA views have the same strides as the CPU ones. Where the
// CPU raises, the GPU must raise the same error with the same text. Tolerances are
// in both.h and docs/numerics.md ("CUDA against CPU").
#include <cmath>
#include <cstring>

#include "cuda/both.h"
#include "support/op_tables.h"

using namespace ember;
using cuda_test::Both;
using cuda_test::kCuda;
using namespace op_tables;

namespace {

Both input(const Shape& shape, DType dt, Layout l, const Domain& d, std::mt19937_64& rng) {
  return cuda_test::layout_both(shape, dt, l, [&](int64_t n) { return draw(n, dt, d, rng); });
}

Tensor pick(const Both& b, bool gpu) { return gpu ? b.gpu : b.cpu; }

// ------------------------------------------------------------------ unary ops ----

struct UnaryRow {
  const char* name;
  Tensor (*fn)(const Tensor&);
  Domain dom;
};
#define EMBER_X(Name, name, kind, saves, autocast, dom, ...) \
  UnaryRow{#name, [](const Tensor& a) { return ember::name(a); }, op_tables::domain::dom},
const std::vector<UnaryRow> kUnaryRows = {EMBER_UNARY_OPS(EMBER_X)};
#undef EMBER_X

// ------------------------------------------------------------------ binary ops ----

struct BinaryRow {
  const char* name;
  Domain da, db;  // the row's domains (kernels/base/ops.def.h)
  Tensor (*fn)(const Tensor&, const Tensor&);
  Tensor (*fn_ts)(const Tensor&, Scalar);
  Tensor (*fn_st)(Scalar, const Tensor&);
  Tensor& (*inplace)(Tensor&, const Tensor&);
  Tensor& (*inplace_s)(Tensor&, Scalar);
};
#define EMBER_X(Name, name, kind, saves, autocast, dom_a, dom_b)                     \
  BinaryRow{#name, op_tables::domain::dom_a, op_tables::domain::dom_b,               \
            [](const Tensor& a, const Tensor& b) { return ember::name(a, b); },     \
            [](const Tensor& a, Scalar b) { return ember::name(a, b); },            \
            [](Scalar a, const Tensor& b) { return ember::name(a, b); },            \
            [](Tensor& a, const Tensor& b) -> Tensor& { return a.name##_(b); },     \
            [](Tensor& a, Scalar b) -> Tensor& { return a.name##_(b); }},
const std::vector<BinaryRow> kBinaryRows = {EMBER_BINARY_OPS(EMBER_X)};
#undef EMBER_X

// Dtype pairs: each dtype with itself, then mixed pairs that exercise promotion.
struct DTypePair {
  DType a, b;
};
std::vector<DTypePair> dtype_pairs() {
  std::vector<DTypePair> p;
  for (DType d : kAllTypes) p.push_back({d, d});
  const std::vector<DTypePair> mixed = {{kInt32, kFloat32}, {kInt8, kUInt8},    {kFloat16, kFloat32},
                                        {kBFloat16, kFloat16}, {kBool, kInt64},  {kUInt8, kFloat64},
                                        {kInt64, kBFloat16}, {kBool, kFloat16}, {kInt8, kInt32}};
  p.insert(p.end(), mixed.begin(), mixed.end());
  return p;
}

// Checks an in-place op on both devices: the destination's whole base must match,
// so that nothing outside the view was written.
void check_inplace(const Both& dst, const std::function<void(Tensor&)>& f) {
  const cuda_test::Outcome c = cuda_test::run([&] {
    Tensor t = dst.cpu;
    f(t);
    return std::vector<Tensor>{dst.base_cpu};
  });
  const cuda_test::Outcome g = cuda_test::run([&] {
    Tensor t = dst.gpu;
    f(t);
    return std::vector<Tensor>{dst.base_gpu};
  });
  if (!cuda_test::same_outcome(c, g)) return;
  CHECK_SAME(g.results[0], c.results[0], cuda_test::tol_for(c.results[0].dtype()));
}

}  // namespace

TEST_CASE("unary ops on CUDA match the CPU", "[cuda][ops][unary]") {
  std::mt19937_64 rng(11);
  for (const UnaryRow& row : kUnaryRows)
    for (DType dt : kAllTypes) {
      auto shapes = kUnaryShapes;
      if (dt == kFloat32 || dt == kFloat16 || dt == kInt32) shapes.push_back({513, 1027});  // vector body and tail
      for (const Shape& s : shapes)
        for (Layout l : kLayouts) {
          if (!ref::layout_applies(l, s)) continue;
          if (ref::numel(s) > 1000 && l != Layout::contiguous && l != Layout::transposed) continue;
          const Both x = input(s, dt, l, row.dom, rng);
          INFO(row.name << "(" << cuda_test::describe(x.cpu) << ") " << ref::layout_name(l));
          cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn(pick(x, gpu))}; });
        }
    }
}

TEST_CASE("unary ops on CUDA: NaN, infinities, signed zero and extremes as on the CPU", "[cuda][ops][unary]") {
  for (const UnaryRow& row : kUnaryRows)
    for (DType dt : kFloatTypes) {
      const Both x = cuda_test::both_of(
          ref::make({9}, dt, {NAN, INFINITY, -INFINITY, 0.0, -0.0, 60.0, -60.0, 1e-30, 88.0}));
      INFO(row.name << " " << ref::str(dt));
      cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn(pick(x, gpu))}; });
    }
}

TEST_CASE("binary ops on CUDA match the CPU: tensor, 0-dim and broadcast operands", "[cuda][ops][binary]") {
  std::mt19937_64 rng(12);
  for (const BinaryRow& row : kBinaryRows) {
    const Domain da = row.da, db = row.db;
    for (const DTypePair& p : dtype_pairs()) {
      auto shapes = kBinaryShapes;
      if (p.a == p.b && (p.a == kFloat32 || p.a == kInt64)) {
        shapes.push_back({{513, 1027}, {513, 1027}});
        shapes.push_back({{513, 1027}, {1027}});
      }
      for (const ShapePair& sp : shapes)
        for (const LayoutPair& lp : kLayoutPairs) {
          if (!ref::layout_applies(lp.a, sp.a) || !ref::layout_applies(lp.b, sp.b)) continue;
          if (ref::numel(sp.a) > 1000 && (lp.b != Layout::contiguous || (lp.a != Layout::contiguous &&
                                                                          lp.a != Layout::transposed)))
            continue;
          const Both a = input(sp.a, p.a, lp.a, da, rng), b = input(sp.b, p.b, lp.b, db, rng);
          INFO(row.name << "(" << cuda_test::describe(a.cpu) << ", " << cuda_test::describe(b.cpu) << ")");
          cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn(pick(a, gpu), pick(b, gpu))}; });
          // The other order (pow's reversed operands could ask for negative integer powers).
          if (std::string(row.name) != "pow")
            cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn(pick(b, gpu), pick(a, gpu))}; });
        }
      // A 0-dim tensor operand on the same device (it yields to the other in promotion).
      for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 4}}) {
        const Both a = input(s, p.a, Layout::contiguous, da, rng), z = input({}, p.b, Layout::contiguous, db, rng);
        INFO(row.name << "(" << cuda_test::describe(a.cpu) << ", 0-dim " << ref::str(p.b) << ")");
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn(pick(a, gpu), pick(z, gpu))}; });
      }
    }
  }
}

TEST_CASE("binary ops on CUDA with a C++ number match the CPU", "[cuda][ops][binary]") {
  std::mt19937_64 rng(13);
  for (const BinaryRow& row : kBinaryRows) {
    const Domain da = row.da, db = row.db;
    for (DType dt : kAllTypes)
      for (DType kind : {kFloat64, kInt64, kBool})
        for (const Shape& s : {Shape{}, Shape{0}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{300, 301}})
          for (Layout l : {Layout::contiguous, Layout::transposed}) {
            if (!ref::layout_applies(l, s)) continue;
            if (ref::numel(s) > 1000 && dt != kFloat32 && dt != kFloat16) continue;  // keeps the suite short
            const Both a = input(s, dt, l, da, rng);
            const Scalar v = draw_scalar(kind, db, rng);
            INFO(row.name << "(" << cuda_test::describe(a.cpu) << ", " << v.str() << ")");
            cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn_ts(pick(a, gpu), v)}; });
            if (std::string(row.name) != "pow")
              cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{row.fn_st(v, pick(a, gpu))}; });
          }
  }
}

TEST_CASE("in-place binary ops on CUDA write views exactly as on the CPU", "[cuda][ops][binary][inplace]") {
  std::mt19937_64 rng(14);
  const std::vector<ShapePair> shapes = {{{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{2, 3, 4}, {3, 1}}, {{6, 4}, {}},
                                         {{37}, {1}},      {{0, 3}, {3}}, {{300, 301}, {301}}};
  for (const BinaryRow& row : kBinaryRows) {
    const Domain da = row.da, db = row.db;
    for (DType dt : kAllTypes)
      for (const ShapePair& sp : shapes)
        // Expanded destinations are left out: several elements share one location.
        for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::permuted}) {
          if (!ref::layout_applies(l, sp.a)) continue;
          if (ref::numel(sp.a) > 1000 && l == Layout::permuted) continue;
          const Both a = input(sp.a, dt, l, da, rng);
          const Both b = input(sp.b, dt, Layout::contiguous, db, rng);
          INFO(row.name << "_(" << cuda_test::describe(a.cpu) << ", " << cuda_test::describe(b.cpu) << ")");
          check_inplace(a, [&](Tensor& t) { row.inplace(t, t.device().is_cuda() ? b.gpu : b.cpu); });
          const Both a2 = input(sp.a, dt, l, da, rng);
          const Scalar v = draw_scalar(is_floating(dt) ? kFloat64 : kInt64, db, rng);
          INFO("with the number " << v.str());
          check_inplace(a2, [&](Tensor& t) { row.inplace_s(t, v); });
        }
    // Aliased operands: a op= a, and a op= a view of itself.
    const Both x = input({6, 6}, kFloat32, Layout::contiguous, da, rng);
    check_inplace(x, [&](Tensor& t) { row.inplace(t, t); });
    const Both y = input({6, 6}, kFloat32, Layout::contiguous, da, rng);
    check_inplace(y, [&](Tensor& t) { row.inplace(t, t.t()); });
  }
}

TEST_CASE("fill_ on CUDA writes non-contiguous views as on the CPU", "[cuda][ops][fill][inplace]") {
  // A view's fill_ goes through the strided copy of a wrapped number, not the
  // contiguous fill kernel; only the view's elements may change (check_inplace
  // compares the whole base with the CPU's). Expanded views are left out: several
  // elements share one location. {300, 301} gives many blocks of the strided loop.
  std::mt19937_64 rng(23);
  const std::vector<Shape> shapes = {{4, 5}, {2, 3, 4}, {37}, {0, 3}, {300, 301}};
  for (DType dt : kAllTypes)
    for (const Shape& shape : shapes)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::permuted}) {
        if (!ref::layout_applies(l, shape)) continue;
        // A value every dtype holds exactly (7 fits uint8 and int8).
        const Scalar v = dt == kBool ? Scalar(true) : is_floating(dt) ? Scalar(-2.5) : Scalar(int64_t(7));
        const double want = dt == kBool ? 1.0 : is_floating(dt) ? -2.5 : 7.0;
        const Both a = input(shape, dt, l, kWide, rng);
        INFO("fill_(" << cuda_test::describe(a.cpu) << ", " << v.str() << ")");
        check_inplace(a, [&](Tensor& t) { t.fill_(v); });
        // And by itself: every element of the view now holds the value.
        const ref::Array got = ref::read(a.gpu.cpu());
        int64_t bad = 0;
        for (double e : got.v) bad += e != want;
        CHECK(bad == 0);
      }
}

TEST_CASE("where and clamp on CUDA match the CPU", "[cuda][ops][where][clamp]") {
  std::mt19937_64 rng(15);
  for (const DTypePair& p : dtype_pairs())
    for (const ShapePair& sp : kBinaryShapes)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::expanded}) {
        if (!ref::layout_applies(l, sp.a)) continue;
        const Shape out = ref::broadcast(sp.a, sp.b);
        const Both c = input(out, kBool, Layout::contiguous, kWide, rng);
        const Both a = input(sp.a, p.a, l, kWide, rng), b = input(sp.b, p.b, Layout::contiguous, kWide, rng);
        INFO("where(" << cuda_test::describe(c.cpu) << ", " << cuda_test::describe(a.cpu) << ", "
                      << cuda_test::describe(b.cpu) << ")");
        cuda_test::check_op([&](bool gpu) {
          return std::vector<Tensor>{where(pick(c, gpu), pick(a, gpu), pick(b, gpu)),
                                     where(pick(c, gpu), pick(a, gpu), Scalar(2.5)),
                                     where(pick(c, gpu), Scalar(int64_t{3}), pick(b, gpu))};
        });
      }
  // A condition of the wrong dtype raises the same error on both.
  const Both f = input({3}, kFloat32, Layout::contiguous, kWide, rng);
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{where(pick(f, gpu), pick(f, gpu), pick(f, gpu))}; });

  struct Bounds {
    std::optional<Scalar> lo, hi;
  };
  const std::vector<Bounds> bounds = {{Scalar(-1.5), Scalar(2.0)}, {Scalar(int64_t{-2}), std::nullopt},
                                      {std::nullopt, Scalar(int64_t{3})}, {Scalar(2.0), Scalar(-1.0)}};
  for (DType dt : kAllTypes)
    for (const Bounds& bd : bounds)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
        Both x = input({5, 7}, dt, l, kSigned, rng);
        INFO("clamp(" << cuda_test::describe(x.cpu) << ")");
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{clamp(pick(x, gpu), bd.lo, bd.hi)}; });
        check_inplace(x, [&](Tensor& t) { t.clamp_(bd.lo, bd.hi); });
      }
  const Both n = cuda_test::both_of(ref::make({4}, kFloat32, {NAN, -5, 5, 0.5}));
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{clamp(pick(n, gpu), Scalar(-1), Scalar(1))}; });
}

// ------------------------------------------------------------------ conversions ----

TEST_CASE("dtype conversions on CUDA are bit for bit the CPU's, for every pair", "[cuda][ops][convert]") {
  // Ordinary values, values that round differently in each type (ties to even),
  // out-of-range values (integer casts saturate, NaN gives 0), half overflow and
  // underflow, and the specials.
  const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.75, 127.0, 128.0,
                                      -128.0, -129.0, 255.0, 256.0, 300.0, -300.0, 65504.0, 65520.0, 70000.0,
                                      1e-8, 6e-8, 1e10, -1e10, 3.0e38, 1.0000001, 2049.0, 1e300, NAN, INFINITY,
                                      -INFINITY, 1.00390625, 1.005859375};
  const int64_t n = static_cast<int64_t>(values.size());
  std::mt19937_64 rng(16);
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      INFO(ref::str(from) << " -> " << ref::str(to));
      // Built in float64 and converted by the CPU (storing NaN or 1e300 straight into an
      // integer would be undefined behaviour in the test itself).
      const Both x = cuda_test::both_of(ref::make({n}, kFloat64, values).to(from));
      // Same-device conversion on the GPU, and conversion inside a cross-device copy.
      CHECK_SAME(x.gpu.to(to), x.cpu.to(to), cuda_test::kExact);
      CHECK_SAME(x.cpu.to(kCuda, to), x.cpu.to(to), cuda_test::kExact);
      Tensor back = x.gpu.to(kCPU, to);
      CHECK(back.device() == kCPU);
      CHECK(ref::compare(back, ref::read(x.cpu.to(to)), cuda_test::kExact) == "");
      // Random data through non-contiguous views, into a non-contiguous destination.
      const Both r = cuda_test::random_both({33, 17}, from, Layout::transposed, rng, -300, 300);
      CHECK_SAME(r.gpu.to(to), r.cpu.to(to), cuda_test::kExact);
      Both dst = cuda_test::random_both({33, 17}, to, Layout::transposed, rng, -3, 3);
      check_inplace(dst, [&](Tensor& t) { t.copy_(t.device().is_cuda() ? r.gpu : r.cpu); });
    }
}

// ------------------------------------------------------------------ reductions ----

namespace {

struct ReduceCase {
  Shape shape;
  Shape dims;  // empty: every dimension
  bool keepdim;
};

const std::vector<ReduceCase> kReduceCases = {
    {{}, {}, false},          {{1}, {}, false},        {{7}, {0}, false},           {{7}, {}, true},
    {{0}, {}, false},         {{2, 0, 3}, {1}, false}, {{2, 0, 3}, {0}, true},      {{4, 5}, {0}, false},
    {{4, 5}, {1}, true},      {{4, 5}, {-1}, false},   {{3, 4, 5}, {0, 2}, false},  {{3, 4, 5}, {1}, true},
    {{3, 4, 5}, {}, false},   {{33, 1000}, {1}, false}, {{1000, 33}, {0}, false},   {{33, 1000}, {0, 1}, false},
    {{2, 1, 6}, {1}, false},
    // With EMBER_CUDA_REDUCE=vector: 1030 outputs over split columns reach the
    // block-per-32-outputs merge with a partial last block; two reduced dims around
    // a kept one reach the packed column kernel's multi-dim addressing.
    {{600, 1030}, {0}, false}, {{5, 3, 40, 64}, {0, 2}, false}, {{300, 64}, {0}, false},
};

// Magnitudes for the tolerance of each reduction: the same reduction of |x| (of x²
// for var), computed on the CPU in float64.
Tensor magnitude(const std::string& op, const Tensor& x, const Shape& dims, bool keepdim) {
  const Tensor a = x.to(kFloat64).abs();
  if (op == "sum") return a.sum(dims, keepdim);
  if (op == "var") return (a * a).mean(dims, keepdim) * 2.0;
  return a.mean(dims, keepdim);
}

// Accumulation error allowed per unit of magnitude: every floating dtype accumulates
// in double on both devices (kernels/cuda/reduce.cu, kernels/cpu/reduce_runs.h); the
// allowance for the narrower dtypes is float32's, the rounding of the result.
double accumulation_k(DType dt) { return dt == kFloat64 ? 1e-13 : 1e-5; }

}  // namespace

TEST_CASE("sum, mean and var on CUDA match the CPU", "[cuda][ops][reduce]") {
  std::mt19937_64 rng(17);
  for (DType dt : kAllTypes)
    for (const ReduceCase& rc : kReduceCases)
      for (Layout l : kLayouts) {
        if (!ref::layout_applies(l, rc.shape)) continue;
        if (ref::numel(rc.shape) > 1000 && l != Layout::contiguous && l != Layout::transposed) continue;
        const Both x = input(rc.shape, dt, l, kWide, rng);
        for (const std::string op : {"sum", "mean", "var0", "var1"}) {
          INFO(op << "(" << cuda_test::describe(x.cpu) << ", dims " << ref::str(rc.dims) << ", keepdim "
                  << rc.keepdim << ") " << ref::layout_name(l));
          auto f = [&](bool gpu) {
            const Tensor t = pick(x, gpu);
            if (op == "sum") return t.sum(rc.dims, rc.keepdim);
            if (op == "mean") return t.mean(rc.dims, rc.keepdim);
            return t.var(rc.dims, op == "var1" ? 1 : 0, rc.keepdim);
          };
          const cuda_test::Outcome c = cuda_test::run([&] { return std::vector<Tensor>{f(false)}; });
          const cuda_test::Outcome g = cuda_test::run([&] { return std::vector<Tensor>{f(true)}; });
          if (!cuda_test::same_outcome(c, g)) continue;
          const Tensor want = c.results[0];
          if (!is_floating(want.dtype())) {
            CHECK_SAME(g.results[0], want, cuda_test::kExact);
            continue;
          }
          const Tensor mag = magnitude(op.rfind("var", 0) == 0 ? "var" : op, x.cpu, rc.dims, rc.keepdim);
          CHECK(cuda_test::diff_within(g.results[0], want,
                                       cuda_test::allowance(want, cuda_test::tol_for(want.dtype()),
                                                            accumulation_k(x.cpu.dtype()), mag)) == "");
        }
      }
}

TEST_CASE("norm and its gradient on CUDA match the CPU", "[cuda][ops][reduce]") {
  // norm is composed of abs, pow, sum, sqrt, amax/amin on the device: each within
  // rounding of the CPU result (relative, accumulation order differs). Errors for
  // empty dims and integer inputs must be the CPU's.
  std::mt19937_64 rng(23);
  auto rel = [](DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 2e-5 : dt == kFloat16 ? 2e-3 : 1.6e-2; };
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32})
    for (const ReduceCase& rc : kReduceCases) {
      const Both x = input(rc.shape, dt, Layout::contiguous, kWide, rng);
      for (double p : {2.0, 1.0, 3.0, 0.5, 0.0, -1.0, double(INFINITY), -double(INFINITY)}) {
        INFO("norm(" << cuda_test::describe(x.cpu) << ", p " << p << ", dims " << ref::str(rc.dims) << ", keepdim "
                     << rc.keepdim << ")");
        const cuda_test::Outcome c = cuda_test::run([&] { return std::vector<Tensor>{x.cpu.norm(p, rc.dims, rc.keepdim)}; });
        const cuda_test::Outcome g = cuda_test::run([&] { return std::vector<Tensor>{x.gpu.norm(p, rc.dims, rc.keepdim)}; });
        if (!cuda_test::same_outcome(c, g)) continue;
        const ref::Array want = ref::read(c.results[0]);
        std::vector<double> allowed;
        for (double v : want.v) allowed.push_back(std::isfinite(v) ? rel(dt) * std::fabs(v) : 0.0);
        CHECK(g.results[0].dtype() == c.results[0].dtype());
        CHECK(ref::compare_within(g.results[0].cpu(), want, allowed) == "");
      }
    }
  for (double p : {2.0, 3.0, double(INFINITY)}) {
    INFO("gradient, p " << p);
    const Both x = input({6, 7}, kFloat32, Layout::contiguous, kWide, rng);
    Tensor a = x.cpu.clone().requires_grad_(), b = x.gpu.clone().requires_grad_();
    a.norm(p, {1}).sum().backward();
    b.norm(p, {1}).sum().backward();
    const ref::Array want = ref::read(a.grad());
    std::vector<double> allowed;
    for (double v : want.v) allowed.push_back(1e-5 * std::fabs(v) + 1e-7);
    CHECK(ref::compare_within(b.grad().cpu(), want, allowed) == "");
  }
}

TEST_CASE("amax, amin, max, min, argmax and argmin on CUDA match the CPU exactly", "[cuda][ops][reduce]") {
  std::mt19937_64 rng(18);
  for (DType dt : kAllTypes)
    for (const ReduceCase& rc : kReduceCases)
      for (Layout l : kLayouts) {
        if (!ref::layout_applies(l, rc.shape)) continue;
        if (ref::numel(rc.shape) > 1000 && l != Layout::contiguous && l != Layout::transposed) continue;
        // Discrete values: ties happen, and both devices must pick the first index.
        const Both x = input(rc.shape, dt, l, kTies, rng);
        INFO(cuda_test::describe(x.cpu) << ", dims " << ref::str(rc.dims) << ", keepdim " << rc.keepdim << " "
                                        << ref::layout_name(l));
        cuda_test::check_op(
            [&](bool gpu) {
              const Tensor t = pick(x, gpu);
              return std::vector<Tensor>{t.amax(rc.dims, rc.keepdim), t.amin(rc.dims, rc.keepdim)};
            },
            [](DType) { return cuda_test::kExact; });
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).max(), pick(x, gpu).min()}; },
                            [](DType) { return cuda_test::kExact; });
        if (rc.dims.size() == 1) {
          const int64_t d = rc.dims[0];
          cuda_test::check_op(
              [&](bool gpu) {
                const Tensor t = pick(x, gpu);
                auto [mv, mi] = t.max(d, rc.keepdim);
                auto [nv, ni] = t.min(d, rc.keepdim);
                return std::vector<Tensor>{mv, mi, nv, ni, t.argmax(d, rc.keepdim), t.argmin(d, rc.keepdim)};
              },
              [](DType) { return cuda_test::kExact; });
        }
        cuda_test::check_op(
            [&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).argmax(), pick(x, gpu).argmin()}; },
            [](DType) { return cuda_test::kExact; });
      }
  // NaN wins max and min, and its (first) index is returned.
  for (DType dt : kFloatTypes) {
    const Both x = cuda_test::both_of(ref::make({2, 4}, dt, {1, NAN, 3, NAN, -1, 2, 2, -1}));
    cuda_test::check_op(
        [&](bool gpu) {
          const Tensor t = pick(x, gpu);
          auto [mv, mi] = t.max(1);
          return std::vector<Tensor>{mv, mi, t.amax({0}), t.amin({1}), t.argmax(), t.argmin({1}), t.max()};
        },
        [](DType) { return cuda_test::kExact; });
  }
}

TEST_CASE("full reductions of a large tensor (1<<22 elements) on CUDA match the CPU", "[cuda][ops][reduce]") {
  const int64_t n = int64_t(1) << 22;
  std::mt19937_64 rng(19);
  // Small integers held in floating types: every partial sum is an integer below 2^24,
  // so float32 accumulation is exact in any order and any lost or doubled element
  // shows. The maximum occurs many times: the first index must win.
  for (DType dt : kAllTypes) {
    INFO(ref::str(dt));
    const Both x = cuda_test::both_of(ref::make({n}, dt, ref::random_values(n, dt == kBool ? kBool : kInt8, rng,
                                                                             dt == kUInt8 ? 0 : -3, 3)));
    cuda_test::check_op(
        [&](bool gpu) {
          const Tensor t = pick(x, gpu);
          return std::vector<Tensor>{t.sum(), t.amax(), t.amin(), t.argmax(), t.argmin()};
        },
        [](DType) { return cuda_test::kExact; });
    if (is_floating(dt)) {
      cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).mean()}; },
                          [](DType) { return cuda_test::kExact; });  // the exact sum over 2^22
      const Tensor want = x.cpu.var();
      const Tensor mag = magnitude("var", x.cpu, {}, false);
      CHECK(cuda_test::diff_within(x.gpu.var(), want,
                                   cuda_test::allowance(want, cuda_test::tol_for(dt), accumulation_k(dt), mag)) == "");
    }
  }
  // Random float64 with cancellation, and large reductions over one dim.
  const Both d = cuda_test::random_both({n}, kFloat64, Layout::contiguous, rng, -1, 1);
  const Tensor want = d.cpu.sum();
  CHECK(cuda_test::diff_within(d.gpu.sum(), want,
                               cuda_test::allowance(want, cuda_test::tol_for(kFloat64), 1e-13,
                                                    magnitude("sum", d.cpu, {}, false))) == "");
  const Both m = cuda_test::random_both({4096, 1024}, kFloat32, Layout::contiguous, rng, -1, 1);
  for (int64_t dim : {0, 1}) {
    INFO("sum over dim " << dim << " of [4096, 1024]");
    const Tensor w = m.cpu.sum({dim});
    CHECK(cuda_test::diff_within(m.gpu.sum({dim}), w,
                                 cuda_test::allowance(w, cuda_test::tol_for(kFloat32), 1e-5,
                                                      magnitude("sum", m.cpu, {dim}, false))) == "");
    cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(m, gpu).argmax(dim)}; },
                        [](DType) { return cuda_test::kExact; });
  }
}

TEST_CASE("sums of contiguous runs at every alignment on CUDA are exact", "[cuda][ops][reduce]") {
  // Runs that start 0 to 8 elements past a 16-byte boundary and end anywhere: with
  // EMBER_CUDA_REDUCE=vector (the cuda-ops-vector-reduce test) the kernels read the
  // aligned middle as 16-byte vectors and the head and tail singly, so a lost or
  // doubled element would show. Small integers keep every sum exact in any order.
  std::mt19937_64 rng(29);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int64_t len : {int64_t(1), int64_t(7), int64_t(33), int64_t(1000), int64_t(20001)}) {
      const Both x = cuda_test::both_of(ref::make({len + 8}, dt, ref::random_values(len + 8, kInt8, rng, -3, 3)));
      for (int64_t start = 0; start <= 8; ++start) {
        INFO(ref::str(dt) << ", " << len << " elements from element " << start);
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).narrow(0, start, len).sum()}; },
                            [](DType) { return cuda_test::kExact; });
      }
      // Rows of a matrix whose row length leaves every row at a different alignment.
      const int64_t cols = len + 3;
      const Both m = cuda_test::both_of(ref::make({5, cols}, dt, ref::random_values(5 * cols, kInt8, rng, -3, 3)));
      INFO(ref::str(dt) << ", rows of [5, " << cols << "]");
      cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(m, gpu).sum({1})}; },
                          [](DType) { return cuda_test::kExact; });
    }
}

TEST_CASE("sum, mean and var on CUDA give NaN and infinities where the CPU does", "[cuda][ops][reduce]") {
  // One special value planted in small integers, on every schedule: a short row, a
  // block per row with split partials merged (20000 elements), columns (dim 0) and
  // rows (dim 1) of [300, 64]. A variance over a NaN or an infinity is NaN (PyTorch's
  // answer); an output whose terms are all finite stays finite.
  struct Planted {
    Shape shape;
    Shape dims;
    int64_t at;  // flat position of the special value
  };
  const std::vector<Planted> cases = {
      {{3}, {}, 1}, {{20000}, {}, 13000}, {{300, 64}, {0}, 200 * 64 + 5}, {{64, 300}, {1}, 7 * 300 + 250}};
  std::mt19937_64 rng(23);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (double special : {double(NAN), double(INFINITY), -double(INFINITY)})
      for (const Planted& pc : cases) {
        INFO(ref::str(dt) << ref::str(pc.shape) << " dims " << ref::str(pc.dims) << " with " << special);
        std::vector<double> v = ref::random_values(ref::numel(pc.shape), kInt8, rng, -3, 3);
        v[pc.at] = special;
        const Both x = cuda_test::both_of(ref::make(pc.shape, dt, v));
        const Tensor var_cpu = x.cpu.var(pc.dims, 1, false);
        // The CPU's answer is PyTorch's: NaN wherever a special value was reduced.
        const ref::Array vc = ref::read(var_cpu);
        int64_t nans = 0;
        for (double e : vc.v) nans += std::isnan(e) ? 1 : 0;
        CHECK(nans == 1);
        for (const std::string op : {"sum", "mean", "var"}) {
          INFO(op);
          auto f = [&](const Tensor& t) {
            if (op == "sum") return t.sum(pc.dims, false);
            if (op == "mean") return t.mean(pc.dims, false);
            return t.var(pc.dims, 1, false);
          };
          const Tensor want = f(x.cpu);
          const Tensor mag = magnitude(op, x.cpu, pc.dims, false);
          CHECK(cuda_test::diff_within(f(x.gpu), want,
                                       cuda_test::allowance(want, cuda_test::tol_for(dt), accumulation_k(dt), mag)) ==
                "");
        }
      }
}

// ------------------------------------------------------------------ softmax ----

TEST_CASE("softmax and log_softmax on CUDA match the CPU", "[cuda][ops][softmax]") {
  struct Case {
    Shape shape;
    int64_t dim;
  };
  // Softmax sizes 1, 7, 1000 and 5000; inner sizes > 1 where the dim is not last.
  // The second line: rows of 8 to 2048 whole 16-byte vectors, which the vector
  // schedules (EMBER_CUDA_REDUCE=vector) hold in registers with 1 to 32 lanes per row
  // (rows past the last live in the same warp), or a block per row.
  const std::vector<Case> cases = {{{5, 1}, 1},       {{3, 7}, 1},       {{3, 7, 5}, 1},  {{4, 1000}, -1},
                                   {{2, 1000, 3}, 1}, {{2, 5000}, 1},    {{5000, 3}, 0},  {{2, 1, 4}, 1},
                                   {{7}, 0},          {{}, 0},           {{0, 7}, 1},     {{3, 0}, 1},
                                   {{37, 16}, 1},     {{9, 64}, 1},      {{5, 200}, 1},   {{33, 8}, 1},
                                   {{3, 512}, 1},     {{37, 32}, 1},     {{3, 256}, 1},   {{3, 2048}, 1}};
  std::mt19937_64 rng(20);
  for (DType dt : kAllTypes)
    for (const Case& c : cases)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
        if (!ref::layout_applies(l, c.shape)) continue;
        const Both x = input(c.shape, dt, l, {-8, 8, -5, 5}, rng);
        INFO(cuda_test::describe(x.cpu) << " dim " << c.dim << " " << ref::layout_name(l));
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).softmax(c.dim)}; });
        // log_softmax values reach -20: half types get a slightly wider absolute margin.
        cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{pick(x, gpu).log_softmax(c.dim)}; },
                            [](DType d) {
                              ref::Tol t = cuda_test::tol_for(d);
                              t.atol = d == kFloat64 ? 1e-12 : 1e-5;
                              return t;
                            });
      }
  // Infinite logits: -inf gives probability 0, a row of -inf gives NaN, +inf NaN too;
  // rows of 3, and rows of 8 (whole vectors for every floating dtype but float64's 2).
  for (DType dt : kFloatTypes) {
    const Both x = cuda_test::both_of(ref::make({3, 3}, dt, {-INFINITY, 0, 1, -INFINITY, -INFINITY, -INFINITY,
                                                            INFINITY, 0, 1}));
    cuda_test::check_op([&](bool gpu) {
      return std::vector<Tensor>{pick(x, gpu).softmax(1), pick(x, gpu).log_softmax(1)};
    });
    std::vector<double> v8(24, 0.5);
    for (int i = 8; i < 16; ++i) v8[size_t(i)] = -INFINITY;  // row 1: all -inf
    v8[3] = -INFINITY;                                      // row 0: one -inf
    v8[20] = INFINITY;                                      // row 2: one +inf
    const Both x8 = cuda_test::both_of(ref::make({3, 8}, dt, v8));
    cuda_test::check_op([&](bool gpu) {
      return std::vector<Tensor>{pick(x8, gpu).softmax(1), pick(x8, gpu).log_softmax(1)};
    });
  }
}

// ------------------------------------------------------------------ cat, stack ----

TEST_CASE("cat and stack on CUDA match the CPU exactly", "[cuda][ops][join]") {
  std::mt19937_64 rng(21);
  for (DType dt : {kFloat32, kFloat16, kInt64, kBool, kUInt8, kFloat64}) {
    const Both a = input({3, 4, 5}, dt, Layout::contiguous, kWide, rng);
    const Both b = input({3, 4, 5}, dt, Layout::transposed, kWide, rng);
    const Both c = input({3, 4, 5}, dt, Layout::sliced, kWide, rng);
    const Both e = input({3, 4, 5}, dt, Layout::expanded, kWide, rng);
    const Both z = input({3, 0, 5}, dt, Layout::contiguous, kWide, rng);
    const Both w = input({3, 2, 5}, dt, Layout::contiguous, kWide, rng);
    const Both big = input({257, 4, 5}, dt, Layout::contiguous, kWide, rng);
    INFO(ref::str(dt));
    for (int64_t dim : {0, 1, 2, -1}) {
      INFO("dim " << dim);
      cuda_test::check_op([&](bool gpu) {
        return std::vector<Tensor>{cat({pick(a, gpu), pick(b, gpu), pick(c, gpu), pick(e, gpu)}, dim),
                                   stack({pick(a, gpu), pick(b, gpu), pick(c, gpu), pick(e, gpu)}, dim)};
      });
    }
    cuda_test::check_op([&](bool gpu) {
      return std::vector<Tensor>{cat({pick(a, gpu), pick(z, gpu), pick(w, gpu)}, 1), cat({pick(z, gpu)}, 1),
                                 cat({pick(big, gpu), pick(a, gpu)}, 0), stack({pick(z, gpu), pick(z, gpu)}, 3)};
    });
    // Mismatched shapes raise the same error on both devices.
    cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{cat({pick(a, gpu), pick(w, gpu)}, 0)}; });
  }
  // Mixed dtypes promote as on the CPU.
  const Both i = input({2, 3}, kInt32, Layout::contiguous, kWide, rng), f = input({2, 3}, kFloat16, Layout::contiguous, kWide, rng);
  cuda_test::check_op([&](bool gpu) { return std::vector<Tensor>{cat({pick(i, gpu), pick(f, gpu)}, 0)}; });
}

// ------------------------------------------------------------------ random ----

TEST_CASE("rand and randn give the CPU's numbers for the same seed", "[cuda][ops][random]") {
  for (DType dt : kFloatTypes)
    for (const Shape& s : {Shape{}, Shape{0}, Shape{1}, Shape{3}, Shape{5, 7}, Shape{1 << 20}, Shape{1001, 3}}) {
      INFO(ref::str(dt) << ref::str(s));
      // Two draws in a row: the generator's offset advances the same way on both devices.
      manual_seed(1234);
      const Tensor u_cpu = rand(s, dt), n_cpu = randn(s, dt), u2_cpu = rand(s, dt);
      manual_seed(1234);
      const Tensor u_gpu = rand(s, {dt, kCuda}), n_gpu = randn(s, {dt, kCuda}), u2_gpu = rand(s, {dt, kCuda});
      // Uniform numbers are integer arithmetic and one rounding: identical bits.
      CHECK_SAME(u_gpu, u_cpu, cuda_test::kExact);
      CHECK_SAME(u2_gpu, u2_cpu, cuda_test::kExact);
      // Normal numbers go through log, sin and cos in float64, whose CUDA versions may
      // differ from glibc's in the last bit or two: identical after rounding to the
      // narrow types but for rare 1-ulp differences.
      const ref::Tol tol = dt == kFloat64 ? ref::Tol{1e-14, 1e-15} : dt == kFloat32 ? ref::Tol{2.5e-7, 1e-12}
                                                                                    : cuda_test::tol_for(dt);
      CHECK_SAME(n_gpu, n_cpu, tol);
      // A generator of its own gives the same on both too.
      Generator g1(99), g2(99);
      CHECK_SAME(rand(s, {dt, kCuda}, &g1), rand(s, dt, &g2), cuda_test::kExact);
    }
  // Bounds and moments of a large CUDA draw.
  manual_seed(7);
  const Tensor u = rand({1 << 22}, {kFloat32, kCuda});
  CHECK(u.amin().item<double>() >= 0.0);
  CHECK(u.amax().item<double>() < 1.0);
  CHECK(u.mean().item<double>() == Approx(0.5).margin(2e-3));
  const Tensor n = randn({1 << 22}, {kFloat32, kCuda});
  CHECK(n.mean().item<double>() == Approx(0.0).margin(3e-3));
  CHECK(n.var().item<double>() == Approx(1.0).margin(5e-3));
}
