// The reduction table: sum, mean, var (correction 0 and 1), norm (eight orders p),
// amax, amin, max/min with indices, argmax/argmin, each over single, several, all
// and negative dims, keepdim on and off, on contiguous, transposed, permuted,
// sliced and expanded inputs of every dtype PyTorch accepts, against float64 loops
// written here. Then the cases a table cannot show well: column reductions (sums,
// var, extremes and their positions, with ties and NaN), a
// 5M-element sum, ties (first index wins) and NaN across thread splits, column sums
// var and extremes with the same bits at every instruction-set level, argmax over
// the flattened input, norm of empty and half inputs and its gradient where the
// norm is zero.
#include <cmath>
#include <functional>

#include <catch2/catch.hpp>

#include "kernels/cpu/isa.h"
#include "kernels/isa_guard.h"
#include "support/reference.h"

using namespace ember;
using ref::Array;
using ref::Layout;

namespace {

const DType kAll[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64, kBool};

// The values of each output's reduced set, in row-major order over the reduced
// dims; outputs in row-major order over the kept dims.
struct Groups {
  Shape keep_shape, out_shape;  // with keepdim true / false
  std::vector<std::vector<double>> values;
};

Groups group(const Array& x, const std::vector<bool>& reduced) {
  Groups g;
  const int64_t nd = static_cast<int64_t>(x.shape.size());
  Shape kept_sizes, red_sizes;
  std::vector<int64_t> kept_dims, red_dims;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[d]) {
      g.keep_shape.push_back(1);
      red_dims.push_back(d);
      red_sizes.push_back(x.shape[d]);
    } else {
      g.keep_shape.push_back(x.shape[d]);
      g.out_shape.push_back(x.shape[d]);
      kept_dims.push_back(d);
      kept_sizes.push_back(x.shape[d]);
    }
  }
  Shape cstride(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) cstride[d] = cstride[d + 1] * x.shape[d + 1];
  const int64_t nout = ref::numel(kept_sizes), nred = ref::numel(red_sizes);
  g.values.resize(nout);
  for (int64_t o = 0; o < nout; ++o) {
    const auto ko = ref::unravel(o, kept_sizes);
    int64_t base = 0;
    for (size_t k = 0; k < kept_dims.size(); ++k) base += ko[k] * cstride[kept_dims[k]];
    for (int64_t r = 0; r < nred; ++r) {
      const auto ro = ref::unravel(r, red_sizes);
      int64_t off = base;
      for (size_t k = 0; k < red_dims.size(); ++k) off += ro[k] * cstride[red_dims[k]];
      g.values[o].push_back(x.v[off]);
    }
  }
  return g;
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double abs_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::fabs(x);
  return s;
}
double var_of(const std::vector<double>& v, int64_t correction) {
  const double n = static_cast<double>(v.size());
  if (n - correction <= 0) return NAN;
  const double m = sum_of(v) / n;
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return sq / (n - correction);
}
// Index of the first maximum (want_max) or minimum; the first NaN wins.
int64_t arg_of(const std::vector<double>& v, bool want_max) {
  int64_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
    if (want_max ? v[i] > v[best] : v[i] < v[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

// The error allowed for a floating result: the result dtype's rounding plus an
// accumulation term proportional to the magnitude of what was added up.
double acc_eps(DType dt) {
  switch (dt) {
    case DType::Float32: return 1e-6;
    case DType::Float64: return 1e-13;
    case DType::Float16: return 1e-4;
    case DType::BFloat16: return 1e-3;
    default: return 0;
  }
}

// Half an ulp of the result dtype, relative.
double out_rounding(DType dt) {
  switch (dt) {
    case DType::Float32: return std::ldexp(1.0, -24);
    case DType::Float64: return std::ldexp(1.0, -53);
    case DType::Float16: return std::ldexp(1.0, -11);
    case DType::BFloat16: return std::ldexp(1.0, -8);
    default: return 0;
  }
}

struct Expect {
  double value;
  double allowed;
};

struct ReduceRow {
  const char* name;
  std::vector<DType> dtypes;
  bool single_dim;       // takes exactly one dim (max/min with indices, argmax/argmin)
  bool empty_raises;     // reducing over an empty dim raises IndexError
  bool ties;             // draw small integers so that ties happen
  DType (*out)(DType);
  std::function<Tensor(const Tensor&, const Shape&, bool)> fn;
  std::function<Expect(const std::vector<double>&, DType out)> ref;
};

DType same(DType d) { return d; }
DType as_int64(DType) { return kInt64; }
DType sum_type(DType d) { return is_floating(d) ? d : kInt64; }

std::vector<ReduceRow> rows() {
  const std::vector<DType> floats = {kFloat32, kFloat64, kFloat16, kBFloat16};
  const std::vector<DType> all(std::begin(kAll), std::end(kAll));
  const std::vector<DType> no_bool = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64};
  auto exact = [](double v) { return Expect{v, 0}; };
  std::vector<ReduceRow> r;
  r.push_back({"sum", all, false, false, false, sum_type,
               [](const Tensor& t, const Shape& d, bool k) { return t.sum(d, k); },
               [](const std::vector<double>& v, DType o) {
                 const double s = sum_of(v);
                 return Expect{s, ref::tol_for(o).rtol * std::fabs(s) + acc_eps(o) * abs_sum(v)};
               }});
  r.push_back({"mean", floats, false, false, false, same,
               [](const Tensor& t, const Shape& d, bool k) { return ember::mean(t, d, k); },
               [](const std::vector<double>& v, DType o) {
                 const double n = static_cast<double>(v.size());
                 const double m = v.empty() ? NAN : sum_of(v) / n;
                 return Expect{m, ref::tol_for(o).rtol * std::fabs(m) + acc_eps(o) * abs_sum(v) / n};
               }});
  for (int64_t c : {0, 1})
    r.push_back({c ? "var(correction=1)" : "var(correction=0)", floats, false, false, false, same,
                 [c](const Tensor& t, const Shape& d, bool k) { return t.var(d, c, k); },
                 [c](const std::vector<double>& v, DType o) {
                   const double x = var_of(v, c);
                   double sq = 0;
                   for (double e : v) sq += e * e;
                   return Expect{x, ref::tol_for(o).rtol * std::fabs(x) + acc_eps(o) * sq / std::max<double>(1, v.size())};
                 }});
  // norm: p = 0 counts, negative and infinite p have no value on an empty set. The
  // float32 pow/sqrt and accumulation err by a few ulps relative to the result.
  for (double p : {2.0, 1.0, 3.0, 0.5, 0.0, -1.0, double(INFINITY), -double(INFINITY)})
    r.push_back({p == 2 ? "norm(p=2)" : p == 1 ? "norm(p=1)" : p == 3 ? "norm(p=3)" : p == 0.5 ? "norm(p=0.5)"
                 : p == 0 ? "norm(p=0)" : p == -1 ? "norm(p=-1)" : p > 0 ? "norm(p=inf)" : "norm(p=-inf)",
                 floats, false, p < 0 || std::isinf(p), false, same,
                 [p](const Tensor& t, const Shape& d, bool k) { return t.norm(p, d, k); },
                 [p](const std::vector<double>& v, DType o) {
                   double r = 0;
                   if (std::isinf(p)) {
                     r = std::fabs(v[0]);
                     for (double x : v) r = p > 0 ? std::max(r, std::fabs(x)) : std::min(r, std::fabs(x));
                   } else if (p == 0) {
                     for (double x : v) r += x != 0;
                   } else {
                     for (double x : v) r += std::pow(std::fabs(x), p);
                     r = std::pow(r, 1 / p);
                   }
                   // p = 0.5 over 2800 elements passes float16's largest finite value: inf, as in PyTorch.
                   if (o == kFloat16 && r > 65520) return Expect{INFINITY, 0};
                   return Expect{r, (ref::tol_for(o).rtol + 8 * acc_eps(o)) * std::fabs(r)};
                 }});
  r.push_back({"amax", all, false, true, true, same,
               [](const Tensor& t, const Shape& d, bool k) { return amax(t, d, k); },
               [](const std::vector<double>& v, DType) { return Expect{v[arg_of(v, true)], 0}; }});
  r.push_back({"amin", all, false, true, true, same,
               [](const Tensor& t, const Shape& d, bool k) { return t.amin(d, k); },
               [](const std::vector<double>& v, DType) { return Expect{v[arg_of(v, false)], 0}; }});
  r.push_back({"max(dim).values", all, true, true, true, same,
               [](const Tensor& t, const Shape& d, bool k) { return std::get<0>(t.max(d[0], k)); },
               [](const std::vector<double>& v, DType) { return Expect{v[arg_of(v, true)], 0}; }});
  r.push_back({"max(dim).indices", all, true, true, true, as_int64,
               [](const Tensor& t, const Shape& d, bool k) { return std::get<1>(ember::max(t, d[0], k)); },
               [exact](const std::vector<double>& v, DType) { return exact(static_cast<double>(arg_of(v, true))); }});
  r.push_back({"min(dim).values", all, true, true, true, same,
               [](const Tensor& t, const Shape& d, bool k) { return std::get<0>(ember::min(t, d[0], k)); },
               [](const std::vector<double>& v, DType) { return Expect{v[arg_of(v, false)], 0}; }});
  r.push_back({"min(dim).indices", all, true, true, true, as_int64,
               [](const Tensor& t, const Shape& d, bool k) { return std::get<1>(t.min(d[0], k)); },
               [exact](const std::vector<double>& v, DType) { return exact(static_cast<double>(arg_of(v, false))); }});
  r.push_back({"argmax", no_bool, true, true, true, as_int64,
               [](const Tensor& t, const Shape& d, bool k) { return t.argmax(d[0], k); },
               [exact](const std::vector<double>& v, DType) { return exact(static_cast<double>(arg_of(v, true))); }});
  r.push_back({"argmin", no_bool, true, true, true, as_int64,
               [](const Tensor& t, const Shape& d, bool k) { return ember::argmin(t, d[0], k); },
               [exact](const std::vector<double>& v, DType) { return exact(static_cast<double>(arg_of(v, false))); }});
  return r;
}

struct Case {
  Shape shape;
  std::vector<Shape> dims;  // {} means all dims
};

const std::vector<Case> kCases = {
    {{}, {{}, {0}, {-1}}},
    {{0}, {{}, {0}}},
    {{3, 0}, {{0}, {1}, {}}},
    {{1}, {{0}, {}}},
    {{7}, {{0}, {-1}, {}}},
    {{4, 5}, {{0}, {1}, {-1}, {0, 1}, {}, {-2, -1}}},
    {{3, 4, 5}, {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1}, {-1, 0}, {}}},
    {{2, 3, 4, 5}, {{1, 3}, {0, 2}, {0, 1, 2, 3}, {3, 1}, {-3}}},
    {{2, 1, 6}, {{1}, {0, 1}, {2}}},
    {{70, 40}, {{0}, {1}, {}}},  // column schedule (dim 0, >= 16 outputs per row) and rows
};

std::vector<bool> mask_of(const Shape& dims, int64_t nd) {
  std::vector<bool> m(nd, dims.empty());
  for (int64_t d : dims)
    if (nd) m[d < 0 ? d + nd : d] = true;
  return m;
}

}  // namespace

TEST_CASE("reductions match the float64 reference", "[ops][reduce]") {
  std::mt19937_64 rng(1001);
  const Layout layouts[] = {Layout::contiguous, Layout::transposed, Layout::permuted, Layout::sliced,
                            Layout::expanded};
  for (const ReduceRow& row : rows())
    for (DType dt : row.dtypes)
      for (const Case& c : kCases)
        for (Layout l : layouts) {
          if (!ref::layout_applies(l, c.shape)) continue;
          if (ref::numel(c.shape) > 1000 && (dt == kInt8 || dt == kUInt8 || dt == kBool || l == Layout::expanded))
            continue;
          Tensor x;
          if (row.ties) {  // small integers (halves in floating dtypes) so that ties happen
            x = ref::layout_tensor(c.shape, dt, l, [&](int64_t n) {
              auto v = ref::random_values(n, is_floating(dt) ? kInt64 : dt, rng, -3, 3);
              if (is_floating(dt))
                for (double& e : v) e /= 2;
              return v;
            });
          } else {
            x = ref::random_tensor(c.shape, dt, l, rng, is_floating(dt) ? -1 : -20, is_floating(dt) ? 1 : 20);
          }
          const Array X = ref::read(x);
          const DType out = row.out(dt);
          for (const Shape& dims : c.dims) {
            if (row.single_dim && dims.size() != 1) continue;
            const auto mask = mask_of(dims, static_cast<int64_t>(c.shape.size()));
            const Groups g = group(X, mask);
            // Reducing over an empty dim raises for max-like ops even when there are no outputs.
            bool empty_dim = false;
            for (size_t d = 0; d < c.shape.size(); ++d) empty_dim = empty_dim || (mask[d] && c.shape[d] == 0);
            for (bool keepdim : {false, true}) {
              INFO(row.name << " of " << ref::str(dt) << ref::str(c.shape) << " (" << ref::layout_name(l)
                            << ") over dims " << ref::str(dims) << (keepdim ? ", keepdim" : ""));
              if (row.empty_raises && empty_dim) {
                CHECK_THROWS_AS(row.fn(x, dims, keepdim), IndexError);
                continue;
              }
              Tensor y = row.fn(x, dims, keepdim);
              Array want{keepdim ? g.keep_shape : g.out_shape, {}};
              std::vector<double> allowed;
              for (const auto& v : g.values) {
                const Expect e = row.ref(v, out);
                want.v.push_back(e.value);
                allowed.push_back(e.allowed);
              }
              CHECK(y.dtype() == out);
              CHECK(ref::compare_within(y, want, allowed) == "");
            }
          }
        }
}

TEST_CASE("mean and var reject integer inputs; sum widens them to int64", "[ops][reduce]") {
  for (DType dt : {kInt8, kUInt8, kInt32, kInt64, kBool}) {
    INFO(ref::str(dt));
    Tensor x = ref::make({3}, dt, {1, 1, 0});
    CHECK_THROWS_AS(ember::mean(x), DTypeError);
    CHECK_THROWS_AS(x.var(), DTypeError);
    CHECK(x.sum().dtype() == kInt64);
    CHECK(ref::read(x.sum()).v == std::vector<double>{2});
  }
  // int8 sums do not wrap: they accumulate in int64 like PyTorch.
  Tensor big = ref::make({4}, kInt8, {127, 127, 127, 127});
  CHECK(ref::read(big.sum()).v == std::vector<double>{508});
  Tensor u = ref::make({3}, kUInt8, {255, 255, 255});
  CHECK(ref::read(u.sum()).v == std::vector<double>{765});
}

TEST_CASE("column reductions and a 5M-element sum are accurate", "[ops][reduce]") {
  std::mt19937_64 rng(1002);
  // Reduce dim 0 of [N, M]: every output walks a strided column.
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1000, 300}, {4097, 33}, {3, 1000}, {50000, 17}}) {
    for (DType dt : {kFloat32, kFloat64, kInt32, kFloat16}) {
      INFO(n << "x" << m << " " << ref::str(dt));
      Tensor x = ref::random_tensor({n, m}, dt, Layout::contiguous, rng, dt == kInt32 ? -1000 : 0, dt == kInt32 ? 1000 : 1);
      const Array X = ref::read(x);
      Array ws{{m}, std::vector<double>(m, 0)}, wm{{1, m}, {}};
      std::vector<double> abs(m, 0), allowed_s(m), allowed_m(m);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          ws.v[j] += X.v[i * m + j];
          abs[j] += std::fabs(X.v[i * m + j]);
        }
      const DType out = is_floating(dt) ? dt : kInt64;
      for (int64_t j = 0; j < m; ++j) {
        wm.v.push_back(ws.v[j] / n);
        // The result's own rounding plus 1e-6 of the magnitude (float32): long columns
        // must not be summed in one float32 chain.
        allowed_s[j] = out_rounding(out) * std::fabs(ws.v[j]) + acc_eps(out) * abs[j];
        allowed_m[j] = allowed_s[j] / n;
      }
      CHECK(ref::compare_within(x.sum({0}), ws, allowed_s) == "");
      if (is_floating(dt)) CHECK(ref::compare_within(x.mean({0}, true), wm, allowed_m) == "");
      // The same through a transposed view: reduce dim 1 of x.t().
      CHECK(ref::compare_within(x.t().sum({-1}), ws, allowed_s) == "");
    }
  }
  // A full float32 sum of 5M elements stays within a few float32 ulps of the exact sum.
  const int64_t n = 5'000'000;
  std::vector<double> v = ref::random_values(n, kFloat32, rng, 0, 1);
  Tensor x = ref::make({n}, kFloat32, v);
  double exact = 0;
  for (double e : v) exact += e;
  const double got = ref::read(x.sum()).v[0];
  INFO("sum " << got << " vs " << exact);
  CHECK(std::fabs(got - exact) <= 1e-6 * exact);
  CHECK(std::fabs(ref::read(x.mean()).v[0] - exact / n) <= 1e-6 * exact / n);
  // And with a mean far from zero, var keeps its precision (two-pass or equivalent).
  Tensor shifted = x + 1000;
  const Array S = ref::read(shifted);
  double m = 0, sq = 0;
  for (double e : S.v) m += e;
  m /= n;
  for (double e : S.v) sq += (e - m) * (e - m);
  const double want_var = sq / (n - 1);
  INFO("var " << ref::read(shifted.var()).v[0] << " vs " << want_var);
  CHECK(std::fabs(ref::read(shifted.var()).v[0] - want_var) <= 1e-4 * want_var);
  // Rows of a [4, 1.25M] tensor, reduced by each row and column.
  Tensor r = x.view({4, n / 4});
  for (int64_t i = 0; i < 4; ++i) {
    double s = 0;
    for (int64_t j = 0; j < n / 4; ++j) s += v[i * (n / 4) + j];
    CHECK(std::fabs(ref::read(r.sum({1})).v[i] - s) <= 1e-6 * s);
  }
}

TEST_CASE("column schedule: var and max/min with their positions over strided dims match float64", "[ops][reduce]") {
  // Long reduced ranges cut into slices ([5000, 40] over dim 0; 3 outer rows of 700;
  // two reduced dims), blocks past 4096 outputs ([300, 4200]), and many blocks run
  // whole ([64, 300, 32]). Values are halves in [-3, 3], so ties are everywhere and
  // the first position must win; one column holds a NaN in a late slice after a
  // number tied with its max, another two NaNs (the first wins), and a third an
  // infinity (var NaN).
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  std::mt19937_64 rng(1006);
  struct Shaped {
    Shape shape, dims;
  };
  const Shaped cases[] = {{{5000, 40}, {0}}, {{3, 700, 20}, {1}}, {{40, 50, 30}, {0, 1}}, {{300, 4200}, {0}},
                          {{64, 300, 32}, {1}}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const Shaped& c : cases) {
      const int64_t numel = ref::numel(c.shape);
      std::vector<double> v = ref::random_values(numel, kInt64, rng, -6, 6);
      for (double& e : v) e /= 2;
      const int64_t last = c.shape.back();  // columns: the innermost kept dim
      v[numel - 3 * last + 1] = NAN;        // late in column 1
      v[last + 2] = NAN;                    // early in column 2, and again late
      v[numel - last + 2] = NAN;
      v[numel / 2 / last * last + 3] = INFINITY;  // column 3, midway
      Tensor x = ref::make(c.shape, dt, v);
      const Array X = ref::read(x);
      const auto mask = mask_of(c.dims, static_cast<int64_t>(c.shape.size()));
      const Groups g = group(X, mask);
      Array want_var{g.out_shape, {}}, want_max{g.out_shape, {}}, want_min{g.out_shape, {}};
      Array want_imax{g.out_shape, {}}, want_imin{g.out_shape, {}};
      std::vector<double> allowed_var, exact(g.values.size(), 0);
      for (const auto& col : g.values) {
        want_var.v.push_back(var_of(col, 1));
        allowed_var.push_back((out_rounding(dt) + 1e-6) * std::fabs(var_of(col, 1)));
        want_imax.v.push_back(static_cast<double>(arg_of(col, true)));
        want_imin.v.push_back(static_cast<double>(arg_of(col, false)));
        want_max.v.push_back(col[arg_of(col, true)]);
        want_min.v.push_back(col[arg_of(col, false)]);
      }
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        INFO(ref::str(dt) << ref::str(c.shape) << " over " << ref::str(c.dims) << ", " << threads << " threads");
        CHECK(ref::compare_within(x.var(c.dims), want_var, allowed_var) == "");
        CHECK(ref::compare_within(x.amax(c.dims), want_max, exact) == "");
        CHECK(ref::compare_within(x.amin(c.dims), want_min, exact) == "");
        if (c.dims.size() == 1) {
          auto [mv, mi] = x.max(c.dims[0]);
          CHECK(ref::compare_within(mv, want_max, exact) == "");
          CHECK(ref::compare_within(mi, want_imax, exact) == "");
          auto [nv, ni] = ember::min(x, c.dims[0]);
          CHECK(ref::compare_within(nv, want_min, exact) == "");
          CHECK(ref::compare_within(ni, want_imin, exact) == "");
          CHECK(ref::compare_within(x.argmax(c.dims[0]), want_imax, exact) == "");
          CHECK(ref::compare_within(x.argmin(c.dims[0]), want_imin, exact) == "");
        }
      }
    }
  }
}

TEST_CASE("column schedule: var of columns far from 0, trending, with an outlier or near overflow matches float64",
          "[ops][reduce]") {
  // The column schedule folds batches of rows into a running mean and m2, each batch
  // shifted by the running mean (or its first value): these columns are where a
  // shift far from the values would cancel. 10000 + k / 64 in float32 and 1e9 + k /
  // 1024 in float64 (a spread far below the offset: an unshifted batch of the float64
  // column loses all its digits), a trend down the rows, and a first value of 1e6
  // above values in [-1, 1]. float64 also holds columns of +-1e152 (squares near
  // 1e304: Welford's update row by row on scaled values, still finite), of +-1e308
  // alternating and of 1e308 then -1e308 (the slices' means of opposite signs), whose
  // variance overflows: inf, not NaN; and a NaN and an infinity (NaN).
  std::mt19937_64 rng(1011);
  std::uniform_int_distribution<int> k(-64, 64);
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  for (DType dt : {kFloat32, kFloat64}) {
    const bool f64 = dt == kFloat64;
    const int64_t rows = 3000, cols = f64 ? 98 : 48;
    std::vector<double> v(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) {
        double& e = v[static_cast<size_t>(r * cols + j)];
        const double sign = r % 2 ? 1.0 : -1.0;
        if (j < 16) e = f64 ? 1e9 + k(rng) / 1024.0 : 10000 + k(rng) / 64.0;
        else if (j < 32) e = static_cast<double>(r) + k(rng) / 64.0;
        else if (j < 48) e = r == 0 ? 1e6 : k(rng) / 64.0;
        else if (j < 64) e = sign * 1e152 * (1 + k(rng) / 1024.0);
        else if (j < 80) e = sign * 1e308;
        else if (j < 96) e = r < rows / 2 ? 1e308 : -1e308;  // slices' means of both signs
        else e = r == 2000 ? (j == 96 ? NAN : INFINITY) : k(rng) / 64.0;
      }
    Tensor x = ref::make({rows, cols}, dt, v);
    const Groups g = group(ref::read(x), mask_of({0}, 2));
    Array want{g.out_shape, {}};
    std::vector<double> allowed;
    for (size_t j = 0; j < g.values.size(); ++j) {
      want.v.push_back(var_of(g.values[j], 1));
      // float32: the result's rounding and a little. float64: 1e-10, but 1e-6 for the
      // columns at 1e9 + k / 1024 (|mean| / sd = 3e10): their running mean moves in
      // steps of an ulp of 1e9, 1.2e-7, and a one-pass update carries that into m2
      // (3e-7 measured); an unshifted batch gives 8e17 for 0.0013.
      const double rel = !f64 ? 2e-7 : j < 16 ? 1e-6 : 1e-10;
      allowed.push_back(rel * std::fabs(want.v.back()));
    }
    for (int64_t j = 64; j < 80 && f64; ++j) REQUIRE(std::isinf(want.v[static_cast<size_t>(j)]));
    // The reference's own sum overflows on the halves of +-1e308 (NaN); their
    // variance is inf. A NaN or an infinity gives NaN.
    for (int64_t j = 80; j < 96 && f64; ++j) want.v[static_cast<size_t>(j)] = INFINITY;
    if (f64) REQUIRE((std::isnan(want.v[96]) && std::isnan(want.v[97])));
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      INFO(ref::str(dt) << ", " << threads << " threads");
      CHECK(ref::compare_within(x.var({0}), want, allowed) == "");
    }
  }
}

TEST_CASE("column schedule: half var of columns far from 0, trending, with an outlier or a square past float32",
          "[ops][reduce]") {
  // float16 and bfloat16 columns fold spans of up to 64 rows with float32 sums
  // (reduce_columns.h's moments_rows_half; 16 slices of 187-188 rows here, so whole
  // and partial spans), on AVX-512 and on the baseline, against
  // a float64 var of the stored values: columns far from 0 (1e4 + 8k in bfloat16,
  // 1e3 + k / 8 in float16), a trend down the rows, a first value far above the rest,
  // one value whose deviation squares past float32 (bfloat16's 2e19: its column
  // takes the double update, variance 1.3e35, finite; float16's 6000), and columns
  // alternating +-1e30 (bfloat16) or +-60000 (float16), whose variance overflows the
  // dtype: inf. Within the result's rounding and 1e-5: a coarse check (the rounding
  // to 8 or 11 bits hides the float32 sums' error; test_reduce_runs.cpp holds the
  // kernels' bits), which catches a wrong merge or a missed overflow.
  ember::testing::IsaGuard guard;
  std::mt19937_64 rng(1013);
  std::uniform_int_distribution<int> k(-64, 64);
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  for (DType dt : {kBFloat16, kFloat16}) {
    const bool bf16 = dt == kBFloat16;
    const int64_t rows = 3000, cols = 80;
    std::vector<double> v(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) {
        double& e = v[static_cast<size_t>(r * cols + j)];
        const double sign = r % 2 ? 1.0 : -1.0;
        if (j < 16) e = bf16 ? 1e4 + 8.0 * k(rng) : 1e3 + k(rng) / 8.0;
        else if (j < 32) e = bf16 ? static_cast<double>(r) + k(rng) / 64.0 : r / 64.0 + k(rng) / 512.0;
        else if (j < 48) e = r == 0 ? (bf16 ? 1e6 : 6e3) : k(rng) / 64.0;
        else if (j < 64) e = r == 1500 ? (bf16 ? 2e19 : 6e3) : k(rng) / 64.0;
        else e = sign * (bf16 ? 1e30 : 6e4);
      }
    Tensor x = ref::make({rows, cols}, dt, v);
    const Groups g = group(ref::read(x), mask_of({0}, 2));
    Array want{g.out_shape, {}};
    std::vector<double> allowed;
    for (size_t j = 0; j < g.values.size(); ++j) {
      want.v.push_back(j < 64 ? var_of(g.values[j], 1) : INFINITY);
      allowed.push_back((out_rounding(dt) + 1e-5) * std::fabs(want.v.back()));
    }
    for (const char* level : {"generic", "avx512"}) {
      if (!ember::cpu::set_isa(level)) continue;
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        INFO(ref::str(dt) << " at " << level << ", " << threads << " threads");
        CHECK(ref::compare_within(x.var({0}), want, allowed) == "");
      }
    }
  }
}

TEST_CASE("column schedule: signed zeros, narrow dtypes and empty columns", "[ops][reduce]") {
  // -0 and +0 tie: the first zero down a column is the max, with its own sign.
  for (double first : {-0.0, 0.0}) {
    std::vector<double> v(3000 * 32, -1.0);
    for (int64_t j = 0; j < 32; ++j) {
      v[5 * 32 + j] = first;
      v[9 * 32 + j] = -first;
    }
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      Tensor x = ref::make({3000, 32}, dt, v);
      auto [mv, mi] = x.max(0);
      const Array M = ref::read(mv), I = ref::read(mi);
      INFO(ref::str(dt) << ", first zero " << (std::signbit(first) ? "-0" : "+0"));
      bool ok = true;
      for (int64_t j = 0; j < 32; ++j)
        ok = ok && M.v[j] == 0 && std::signbit(M.v[j]) == std::signbit(first) && I.v[j] == 5;
      CHECK(ok);
    }
  }
  // Integer and bool columns, ties everywhere: long enough to be cut into slices
  // ([3000, 40]), wide ([50, 1100]), and too small for a thread team, so that one
  // state runs the whole column ([20, 40]). int8, uint8 and bool run the float32
  // loops, which hold them exactly; int32 and int64 their own, and their values here
  // reach past float32's 24 bits, which a loop in float32 would round into false ties.
  std::mt19937_64 rng(1007);
  for (DType dt : {kInt8, kUInt8, kBool, kInt32, kInt64})
    for (const Shape& shape : {Shape{3000, 40}, Shape{50, 1100}, Shape{20, 40}}) {
      // The 1-byte dtypes over their whole range (a widening that read uint8 as int8
      // would show), the wider ones near 0 so that ties happen.
      const double lo = dt == kBool || dt == kUInt8 ? 0 : dt == kInt8 ? -128 : -5;
      const double hi = dt == kBool ? 1 : dt == kUInt8 ? 255 : dt == kInt8 ? 127 : 5;
      std::vector<double> v = ref::random_values(shape[0] * shape[1], dt, rng, lo, hi);
      if (dt == kInt32 || dt == kInt64)
        for (size_t i = 0; i < v.size(); i += 3) v[i] += 100000001;  // 100000001 + k: apart, not in float32
      Tensor x = ref::make(shape, dt, v);
      const Array X = ref::read(x);
      const Groups g = group(X, mask_of({0}, 2));
      Array want_i{g.out_shape, {}}, want_v{g.out_shape, {}}, want_n{g.out_shape, {}}, want_m{g.out_shape, {}};
      for (const auto& col : g.values) {
        want_i.v.push_back(static_cast<double>(arg_of(col, true)));
        want_v.v.push_back(col[arg_of(col, true)]);
        want_n.v.push_back(static_cast<double>(arg_of(col, false)));
        want_m.v.push_back(col[arg_of(col, false)]);
      }
      const std::vector<double> exact(static_cast<size_t>(shape[1]), 0);
      INFO(ref::str(dt) << ref::str(shape));
      auto [mv, mi] = x.max(0);
      CHECK(ref::compare_within(mv, want_v, exact) == "");
      CHECK(ref::compare_within(mi, want_i, exact) == "");
      CHECK(ref::compare_within(x.amin({0}), want_m, exact) == "");
      CHECK(ref::compare_within(x.argmin(0), want_n, exact) == "");
    }
  // Empty columns: sum 0, mean and var NaN; the input has no memory at all.
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor e = zeros({0, 5000}, dt);
    const Array s0 = ref::read(e.sum({0})), m0 = ref::read(e.mean({0})), v0 = ref::read(e.var({0}));
    bool ok = s0.v.size() == 5000 && m0.v.size() == 5000 && v0.v.size() == 5000;
    for (size_t j = 0; ok && j < 5000; ++j) ok = s0.v[j] == 0 && std::isnan(m0.v[j]) && std::isnan(v0.v[j]);
    CHECK(ok);
  }
}

TEST_CASE("max/min/argmax: first index on ties, NaN wins, whatever the thread count", "[ops][reduce]") {
  const int saved = get_num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32}) {
      INFO(ref::str(dt));
      for (int64_t n : {10, 100000}) {
        // Two equal maxima, in the first and the last quarter (different thread slices).
        std::vector<double> v(n, 0);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 7) - 3;
        const int64_t a = n / 5, b = n - n / 5;
        v[a] = 50;
        v[b] = 50;
        v[a + 1] = -50;
        v[b - 1] = -50;
        Tensor x = ref::make({n}, dt, v);
        CHECK(x.argmax().item<int64_t>() == a);
        CHECK(x.argmin().item<int64_t>() == a + 1);
        auto [mv, mi] = x.max(0);
        CHECK(mi.item<int64_t>() == a);
        CHECK(mv.item<double>() == 50);
        auto [nv, ni] = ember::min(x, 0, true);
        CHECK(ni.shape() == Shape{1});
        CHECK(ni.item<int64_t>() == a + 1);
        CHECK(nv.item<double>() == -50);
        CHECK(x.max().item<double>() == 50);
        CHECK(x.min().item<double>() == -50);
        CHECK(x.amax().item<double>() == 50);
        if (is_floating(dt)) {
          // A NaN beats every number, and the first NaN is the index reported.
          v[b + 1] = NAN;
          v[n - 1] = NAN;
          Tensor y = ref::make({n}, dt, v);
          CHECK(y.argmax().item<int64_t>() == b + 1);
          CHECK(y.argmin().item<int64_t>() == b + 1);
          CHECK(std::isnan(y.max().item<double>()));
          CHECK(std::isnan(y.amin().item<double>()));
          CHECK(std::get<1>(y.max(0)).item<int64_t>() == b + 1);
          CHECK(std::isnan(std::get<0>(y.min(0)).item<double>()));
          CHECK(std::isnan(y.sum().item<double>()));
        }
      }
    }
  }
  set_num_threads(saved);
}

TEST_CASE("sum, mean, var, norm and max have the same bits on any number of threads", "[ops][reduce]") {
  // Long reductions are cut into slices fixed by the shape: a float64 sum of 600k
  // random values would differ in its last bits if the cut moved with the threads.
  // [3000, 1100] over dim 0: 16 slices whose states merge by 512-column ranges across
  // the team (reduce.cpp's run_columns), in bfloat16 too (spans of 64 rows).
  struct Restore {
    int threads = get_num_threads();
    ~Restore() { set_num_threads(threads); }
  } restore;
  std::mt19937_64 rng(1004);
  struct Shaped {
    Shape shape, dims;
  };
  const Shaped cases[] = {{{600000}, {}},       {{3, 200000}, {1}}, {{20000, 30}, {0}}, {{40, 500, 30}, {0, 1}},
                          {{7, 90000}, {}},     {{12, 30000}, {1}}, {{3000, 1100}, {0}}};
  for (DType dt : {kFloat64, kFloat32, kBFloat16}) {
    for (const Shaped& c : cases) {
      Tensor x = ref::random_tensor(c.shape, dt, Layout::contiguous, rng, -1, 1);
      auto all = [&] {
        std::vector<Tensor> r = {x.sum(c.dims), ember::mean(x, c.dims), x.var(c.dims), x.norm(2, c.dims)};
        if (c.dims.size() == 1) {
          auto [mv, mi] = x.max(c.dims[0]);
          r.push_back(mv);
          r.push_back(mi);
        }
        return r;
      };
      set_num_threads(1);
      const std::vector<Tensor> one = all();
      for (int threads : {2, 3, 5}) {
        set_num_threads(threads);
        const std::vector<Tensor> many = all();
        for (size_t i = 0; i < one.size(); ++i) {
          INFO(ref::str(dt) << ref::str(c.shape) << " over " << ref::str(c.dims) << ", result " << i << ", "
                            << threads << " threads");
          CHECK(ref::read(many[i]).v == ref::read(one[i]).v);
        }
      }
    }
  }
}

TEST_CASE("float32 and half column sums, var and extremes have the same bits at every instruction-set level",
          "[ops][reduce]") {
  // AVX-512 folds a column reduction's rows in batches (kernels/cpu/column_rows.h)
  // where the baseline folds them one at a time; the batches must end at the same
  // flushes, follow the same rows and do the same arithmetic, so any misplaced batch
  // or flush, or a contracted multiply-add, shows as a changed bit. Slices that start
  // off a multiple of 8 or 64 rows ([50000, 17]: 3125 rows each), a short last batch,
  // two reduced dims, and the many-blocks schedule; ties and NaN for the extremes.
  // float16 and bfloat16 rows are widened in registers by AVX-512's var and extreme
  // loops and in blocks by the baseline (spans of 64 rows by 128 columns; [300,
  // 1000]: 7 whole blocks and a partial one), with the same results.
  ember::testing::IsaGuard guard;
  std::mt19937_64 rng(1005);
  struct Shaped {
    Shape shape, dims;
  };
  const Shaped cases[] = {{{50000, 17}, {0}}, {{4097, 33}, {0}}, {{40, 500, 30}, {0, 1}},
                          {{300, 1000}, {0}}, {{64, 20, 4100}, {1}}};
  for (DType dt : {kFloat32, kFloat16, kBFloat16})
  for (const Shaped& c : cases) {
    std::vector<double> v = ref::random_values(ref::numel(c.shape), kInt64, rng, -8, 8);
    for (double& e : v) e /= 4;
    v[v.size() / 3] = NAN;
    const Tensor x = ref::make(c.shape, dt, v);
    const Tensor smooth = ref::random_tensor(c.shape, dt, Layout::contiguous, rng, -1, 1);
    const auto all = [&] {
      std::vector<std::vector<double>> r = {ref::read(smooth.sum(c.dims)).v, ref::read(smooth.var(c.dims)).v,
                                            ref::read(x.var(c.dims)).v, ref::read(x.amax(c.dims)).v,
                                            ref::read(x.amin(c.dims)).v};
      if (c.dims.size() == 1) {
        auto [mv, mi] = x.max(c.dims[0]);
        r.push_back(ref::read(mv).v);
        r.push_back(ref::read(mi).v);
        r.push_back(ref::read(x.argmin(c.dims[0])).v);
      }
      return r;
    };
    REQUIRE(ember::cpu::set_isa("generic"));
    const auto base = all();
    for (const char* level : {"avx2", "avx512"}) {
      if (!ember::cpu::set_isa(level)) continue;
      const auto got = all();
      for (size_t i = 0; i < base.size(); ++i) {
        INFO(ref::str(dt) << ref::str(c.shape) << " over " << ref::str(c.dims) << " at " << level << ", result " << i);
        bool same = got[i].size() == base[i].size();
        for (size_t j = 0; same && j < got[i].size(); ++j)
          same = std::isnan(base[i][j]) ? std::isnan(got[i][j]) : got[i][j] == base[i][j];
        CHECK(same);
      }
    }
  }
}

TEST_CASE("argmax without dim indexes the flattened input, in row-major order", "[ops][reduce]") {
  std::mt19937_64 rng(1003);
  for (Layout l : {Layout::contiguous, Layout::transposed, Layout::permuted, Layout::sliced}) {
    Tensor x = ref::random_tensor({3, 4, 5}, kFloat32, l, rng, -1, 1);
    const Array X = ref::read(x);
    INFO(ref::layout_name(l));
    CHECK(x.argmax().item<int64_t>() == arg_of(X.v, true));
    CHECK(x.argmin().item<int64_t>() == arg_of(X.v, false));
    CHECK(x.argmax().dim() == 0);
    CHECK(x.argmax(std::nullopt, true).shape() == Shape{1, 1, 1});
    CHECK(x.argmax(std::nullopt, true).item<int64_t>() == arg_of(X.v, true));
  }
  CHECK(ref::make({}, kInt64, {5}).argmax().item<int64_t>() == 0);
  CHECK_THROWS_AS(zeros({0, 3}).argmax(), IndexError);
  CHECK(zeros({0, 3}).argmax(1).shape() == Shape{0});
}

TEST_CASE("reductions of empty tensors", "[ops][reduce]") {
  CHECK(zeros({0}).sum().item<float>() == 0);
  CHECK(zeros({0, 3}, kInt32).sum().item<int64_t>() == 0);
  CHECK(std::isnan(zeros({0}).mean().item<float>()));
  CHECK(ref::read(zeros({0, 3}).sum({0})).v == std::vector<double>{0, 0, 0});
  CHECK(zeros({0, 3}).sum({1}).shape() == Shape{0});
  CHECK(zeros({0, 3}).amax({1}).shape() == Shape{0});
  CHECK_THROWS_AS(zeros({0, 3}).amax({0}), IndexError);
  CHECK_THROWS_AS(zeros({0}).max(), IndexError);
  CHECK_THROWS_AS(zeros({2, 0}).max(1), IndexError);
  CHECK(std::isnan(ones({1}).var().item<float>()));  // one value, correction 1
  CHECK(ones({1}).var({}, 0).item<float>() == 0);
}

TEST_CASE("norm: empty inputs, half inputs, and the gradient where the norm is zero", "[ops][reduce]") {
  // The error texts are asserted in test_errors.cpp; here, what is not an error.
  CHECK_THROWS_AS(zeros({0, 3}).norm(-INFINITY, {0}), IndexError);
  CHECK(zeros({0, 3}).norm(-INFINITY, {1}).shape() == Shape{0});
  CHECK(zeros({0}).norm().item<float>() == 0);

  // Half inputs: computed in float32, rounded once to the input's dtype.
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor h = ref::make({3}, dt, {3, -4, 12});
    CHECK(h.norm().dtype() == dt);
    CHECK(h.norm().item<float>() == 13);
    Tensor w = ref::make({2}, dt, {1, 1}).requires_grad_();
    w.norm().backward();
    CHECK(w.grad().dtype() == dt);
    CHECK(ref::read(w.grad()).v == ref::read(ref::make({2}, dt, {0.70710678, 0.70710678})).v);
  }

  // Where the norm is zero the gradient is 0 (PyTorch's subgradient), not 0/0.
  // Values by hand: d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1).
  struct Row {
    double p;
    std::vector<double> x, grad;
  };
  const Row rows[] = {
      {2, {0, 0}, {0, 0}},
      {0.5, {0, 0}, {0, 0}},
      {0.5, {0, 1}, {0, 1}},           // norm 1: x = 0 contributes 0, not inf * 0
      {-1, {0, 1}, {0, 0}},            // a zero makes the norm 0
      {1, {0, -2, 1}, {0, -1, 1}},     // sign, 0 at 0
      {3, {0, -2, 1}, {0, -4 / std::pow(9.0, 2.0 / 3), 1 / std::pow(9.0, 2.0 / 3)}},
      {INFINITY, {2, -2, 1}, {0.5, -0.5, 0}},  // shared evenly by the ties
      {INFINITY, {NAN, -2, 1}, {0, 0, 0}},     // the NaN is the "largest" and has sign 0 (PyTorch: [0, -0, 0])
      {0, {2, -2, 1}, {0, 0, 0}},
  };
  for (const Row& r : rows) {
    INFO("p = " << r.p);
    Tensor x = ref::make({static_cast<int64_t>(r.x.size())}, kFloat64, r.x).requires_grad_();
    x.norm(r.p).backward();
    CHECK(ref::compare_within(x.grad(), Array{{static_cast<int64_t>(r.x.size())}, r.grad},
                              std::vector<double>(r.x.size(), 1e-12)) == "");
  }
}
