// The elementwise op table: one row per unary and binary op of ops.def.h (the rows
// are generated from the same X-macro lists, so a new op without a reference here
// does not compile), plus where, clamp, softmax and log_softmax. Every row runs on
// random inputs of each dtype PyTorch supports for it, over 0-dim, 0-size, 1-size,
// broadcast and non-contiguous (transposed, stepped slice, expanded, permuted)
// inputs, and is compared with a float64 reference computed here from the raw input
// memory. Result dtypes follow PyTorch's promotion (written out by hand below);
// in-place forms write into non-contiguous views and aliased inputs.
#include <cmath>
#include <algorithm>

#include <catch2/catch.hpp>

#include "support/op_tables.h"
#include "support/reference.h"

using namespace ember;
using ref::Array;
using namespace op_tables;

namespace {

// A tensor of logical shape `shape` in layout `l` whose values come from `d`.
Tensor input(const Shape& shape, DType dt, Layout l, const Domain& d, std::mt19937_64& rng) {
  return ref::layout_tensor(shape, dt, l, [&](int64_t n) { return draw(n, dt, d, rng); });
}

// All storage elements, flat (to check what an in-place op left outside its view).
Array read_storage(const Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  return ref::read(from_blob(t.storage()->data(), {n}, t.dtype()));
}

// Storage positions of a view's elements, row-major.
std::vector<int64_t> positions(const Tensor& t) {
  std::vector<int64_t> pos(ref::numel(t.shape()));
  for (size_t i = 0; i < pos.size(); ++i) {
    const auto idx = ref::unravel(static_cast<int64_t>(i), t.shape());
    int64_t off = t.storage_offset();
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride()[d];
    pos[i] = off;
  }
  return pos;
}

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << ref::str(t.dtype()) << ref::str(t.shape()) << " strides " << ref::str(t.stride());
  return os.str();
}

// ---------------------------------------------------------------- unary ops ----

namespace uref {
double neg(double x) { return -x; }
double abs(double x) { return std::fabs(x); }
double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
double exp(double x) { return std::exp(x); }
double log(double x) { return std::log(x); }
double sqrt(double x) { return std::sqrt(x); }
double rsqrt(double x) { return 1 / std::sqrt(x); }
double sin(double x) { return std::sin(x); }
double cos(double x) { return std::cos(x); }
double tanh(double x) { return std::tanh(x); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }
double erf(double x) { return std::erf(x); }
}  // namespace uref

struct UnaryRow {
  const char* name;
  bool floating;  // integer and bool inputs give float32
  Tensor (*fn)(const Tensor&);
  Tensor (*method)(const Tensor&);
  double (*ref)(double);
  Domain dom;
  std::vector<DType> dtypes;  // the input dtypes PyTorch accepts
};

// One row per op of kernels/base/ops.def.h: its domain and dtypes come from there,
// its float64 reference from uref above.
#define EMBER_X(Name, name, kind, saves, autocast, dom, dts)                                            \
  UnaryRow{#name,                                                                                       \
           UnaryKind::kind == UnaryKind::floating,                                                      \
           [](const Tensor& a) { return ember::name(a); },                                              \
           [](const Tensor& a) { return a.name(); },                                                    \
           &uref::name,                                                                                 \
           op_tables::domain::dom,                                                                      \
           op_tables::dtypes::dts},
const std::vector<UnaryRow> kUnaryRows = {EMBER_UNARY_OPS(EMBER_X)};
#undef EMBER_X

bool accepts(const UnaryRow& row, DType dt) { return std::find(row.dtypes.begin(), row.dtypes.end(), dt) != row.dtypes.end(); }

// The dtypes PyTorch accepts for each unary op (float16 too: PyTorch has it on CUDA);
// ops that keep their input's dtype refuse bool.
std::vector<DType> unary_dtypes(const UnaryRow& row) {
  std::vector<DType> d;
  for (DType dt : row.dtypes)
    if (row.floating || dt != kBool) d.push_back(dt);
  return d;
}

// ---------------------------------------------------------------- binary ops ----

enum class BKind { arith, truediv, compare };

namespace bref {
double add(double a, double b) { return a + b; }
double sub(double a, double b) { return a - b; }
double mul(double a, double b) { return a * b; }
double div(double a, double b) { return a / b; }
double pow(double a, double b) { return std::pow(a, b); }
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
double eq(double a, double b) { return a == b; }
double ne(double a, double b) { return a != b; }
double lt(double a, double b) { return a < b; }
double le(double a, double b) { return a <= b; }
double gt(double a, double b) { return a > b; }
double ge(double a, double b) { return a >= b; }
}  // namespace bref

// Domains of the first and second operand.
struct BDomain {
  Domain a, b;
};

struct BinaryRow {
  const char* name;
  BKind kind;
  Tensor (*fn)(const Tensor&, const Tensor&);
  Tensor (*fn_ts)(const Tensor&, Scalar);
  Tensor (*fn_st)(Scalar, const Tensor&);
  Tensor (*method)(const Tensor&, const Tensor&);
  Tensor& (*inplace)(Tensor&, const Tensor&);
  Tensor& (*inplace_s)(Tensor&, Scalar);
  double (*ref)(double, double);
  BDomain dom;
  BinaryOp op;
};

#define EMBER_X(Name, name, kind, saves, autocast, dom_a, dom_b)                                            \
  BinaryRow{#name,                                                                                          \
            BKind::kind,                                                                                    \
            [](const Tensor& a, const Tensor& b) { return ember::name(a, b); },                            \
            [](const Tensor& a, Scalar b) { return ember::name(a, b); },                                   \
            [](Scalar a, const Tensor& b) { return ember::name(a, b); },                                   \
            [](const Tensor& a, const Tensor& b) { return a.name(b); },                                    \
            [](Tensor& a, const Tensor& b) -> Tensor& { return a.name##_(b); },                            \
            [](Tensor& a, Scalar b) -> Tensor& { return a.name##_(b); },                                   \
            &bref::name,                                                                                    \
            BDomain{op_tables::domain::dom_a, op_tables::domain::dom_b},                                    \
            BinaryOp::name},
const std::vector<BinaryRow> kBinaryRows = {EMBER_BINARY_OPS(EMBER_X)};
#undef EMBER_X

// PyTorch rejects bool - bool. (It also has no bool pow; Ember computes it, and
// the table checks the mathematical answer, a || !b.)
bool supports(const BinaryRow& row, DType compute) { return !(compute == kBool && std::string(row.name) == "sub"); }

// How the second operand is given.
enum class Operand { dim, zero_dim, scalar };

// A dtype configuration with the promoted dtype PyTorch 1.13 gives
// (torch.result_type), written out by hand. For Operand::scalar, `b` names the
// C++ number's kind: Float64 = a floating literal, Int64 = an integer, Bool = bool.
struct Config {
  DType a, b;
  Operand bk;
  DType promoted;
};

std::vector<Config> configs() {
  std::vector<Config> c;
  for (DType d : kAllTypes) c.push_back({d, d, Operand::dim, d});
  const std::vector<Config> mixed = {
      {kInt32, kFloat32, Operand::dim, kFloat32},
      {kInt8, kUInt8, Operand::dim, kInt32},  // PyTorch: int16, which Ember does not have
      {kFloat16, kFloat32, Operand::dim, kFloat32},
      {kBFloat16, kFloat16, Operand::dim, kFloat32},
      {kBool, kInt64, Operand::dim, kInt64},
      {kUInt8, kFloat64, Operand::dim, kFloat64},
      {kInt64, kBFloat16, Operand::dim, kBFloat16},
      {kBool, kFloat16, Operand::dim, kFloat16},
      {kInt8, kInt32, Operand::dim, kInt32},
      {kFloat16, kFloat64, Operand::zero_dim, kFloat16},
      {kInt32, kFloat64, Operand::zero_dim, kFloat64},
      {kInt32, kInt64, Operand::zero_dim, kInt32},
      {kUInt8, kInt8, Operand::zero_dim, kUInt8},
      {kBool, kInt32, Operand::zero_dim, kInt32},
      {kBFloat16, kFloat32, Operand::zero_dim, kBFloat16},
      {kInt32, kFloat64, Operand::scalar, kFloat32},
      {kInt8, kInt64, Operand::scalar, kInt8},
      {kUInt8, kInt64, Operand::scalar, kUInt8},
      {kFloat16, kFloat64, Operand::scalar, kFloat16},
      {kBFloat16, kInt64, Operand::scalar, kBFloat16},
      {kFloat64, kFloat64, Operand::scalar, kFloat64},
      {kBool, kBool, Operand::scalar, kBool},
      {kBool, kInt64, Operand::scalar, kInt64},
      {kBool, kFloat64, Operand::scalar, kFloat32},
      {kInt64, kBool, Operand::scalar, kInt64},
  };
  c.insert(c.end(), mixed.begin(), mixed.end());
  return c;
}

DType result_dtype(const BinaryRow& row, DType promoted) {
  if (row.kind == BKind::compare) return kBool;
  if (row.kind == BKind::truediv && !is_floating(promoted)) return kFloat32;
  return promoted;
}

// Expected out = op(a, b) in double: operands are converted to the compute dtype
// first (as the kernels do), integer results wrap to the result dtype.
Array expected_binary(const BinaryRow& row, const Array& A, const Array& B, DType compute, DType out) {
  const Shape shape = ref::broadcast(A.shape, B.shape);
  const Array a = ref::expand(A, shape), b = ref::expand(B, shape);
  Array e{shape, std::vector<double>(a.v.size())};
  for (size_t i = 0; i < e.v.size(); ++i) {
    const double x = ref::cast(a.v[i], compute), y = ref::cast(b.v[i], compute);
    double r = row.ref(x, y);
    if (!is_floating(out)) r = ref::cast(r, out);
    e.v[i] = r;
  }
  return e;
}

// The tolerance of a result; integer and bool results are exact.
ref::Tol tol_of(DType out) { return ref::tol_for(out); }

bool can_cast_by_hand(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

const std::vector<Shape> kScalarPartnerShapes = {{}, {0}, {1}, {7}, {3, 4}, {2, 3, 5}};

}  // namespace

TEST_CASE("unary ops match the float64 reference", "[ops][unary]") {
  std::mt19937_64 rng(101);
  for (const UnaryRow& row : kUnaryRows) {
    for (DType dt : unary_dtypes(row)) {
      const DType out = row.floating && !is_floating(dt) ? kFloat32 : dt;
      auto shapes = kUnaryShapes;
      if (dt == kFloat32 || dt == kInt32 || dt == kBFloat16) shapes.push_back({301, 130});  // threaded; threads start mid-row
      for (const Shape& s : shapes)
        for (Layout l : kLayouts) {
          if (!ref::layout_applies(l, s)) continue;
          if (s.size() > 1 && s[0] * s[1] > 1000 && l != Layout::contiguous && l != Layout::transposed) continue;
          Tensor x = input(s, dt, l, row.dom, rng);
          INFO(row.name << "(" << describe(x) << ") layout " << ref::layout_name(l));
          Tensor y = row.fn(x);
          CHECK(y.dtype() == out);
          Array e = ref::read(x);
          for (double& v : e.v) v = is_floating(out) ? row.ref(v) : ref::cast(row.ref(v), out);
          CHECK_MATCH(y, e, tol_of(out));
          if (l == Layout::transposed) CHECK_MATCH(row.method(x), e, tol_of(out));
        }
    }
  }
}

TEST_CASE("unary ops: bool inputs, NaN, infinities and signed zero", "[ops][unary]") {
  for (const UnaryRow& row : kUnaryRows) {
    INFO(row.name);
    Tensor b = ref::make({2}, kBool, {1, 0});
    if (row.floating && accepts(row, kBool)) {
      CHECK(row.fn(b).dtype() == kFloat32);
      CHECK_MATCH(row.fn(b), (Array{{2}, {row.ref(1), row.ref(0)}}), ref::tol_for(kFloat32));
    } else if (std::string(row.name) == "neg") {
      CHECK_THROWS_AS(row.fn(b), DTypeError);
    } else if (!row.floating) {
      CHECK_THROWS_AS(row.fn(b), Error);
    }
    for (DType dt : kFloatTypes) {
      const std::vector<double> special = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
      Tensor x = ref::make({5}, dt, special);
      Array e{{5}, {}};
      for (double v : special) e.v.push_back(row.ref(v));
      CHECK_MATCH(row.fn(x), e, ref::tol_for(dt));
    }
  }
  // relu maps -0 to +0 and keeps NaN; abs clears the sign of -0.
  Tensor z = ref::make({2}, kFloat32, {-0.0, NAN});
  CHECK_FALSE(std::signbit(ref::read(relu(z)).v[0]));
  CHECK(std::isnan(ref::read(relu(z)).v[1]));
  CHECK_FALSE(std::signbit(ref::read(ember::abs(z)).v[0]));
  // Integer negation and abs wrap like two's complement (PyTorch does the same).
  Tensor i8 = ref::make({3}, kInt8, {-128, 127, -5});
  CHECK(ref::read(neg(i8)).v == std::vector<double>{-128, -127, 5});
  CHECK(ref::read(ember::abs(i8)).v == std::vector<double>{-128, 127, 5});
  Tensor u8 = ref::make({2}, kUInt8, {5, 0});
  CHECK(ref::read(neg(u8)).v == std::vector<double>{251, 0});
}

// exp, erf, tanh, sigmoid and gelu run float32 and half values through one
// float32 kernel whatever the layout (strided runs are gathered into blocks for
// it), so a transposed or stepped view gives the contiguous result bit for bit.
// 600 x 300 values: several gather blocks per row, threaded. Most lie within
// |x| < 3.9 and every 40th in (-12, 12), so vectors of the AVX-512 gelu mix its two
// formulas differently in each layout (and both tails of each function are hit).
TEST_CASE("float transcendentals give the same bits in every layout", "[ops][unary]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(-12.0, 12.0), narrow(-3.9, 3.9);
  std::vector<double> v(600 * 300);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 40 == 0 ? wide(rng) : narrow(rng);
  const std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> ops = {
      {"exp", [](const Tensor& t) { return ember::exp(t); }},   {"erf", [](const Tensor& t) { return ember::erf(t); }},
      {"tanh", [](const Tensor& t) { return ember::tanh(t); }}, {"sigmoid", [](const Tensor& t) { return ember::sigmoid(t); }},
      {"gelu", [](const Tensor& t) { return ember::gelu(t); }}};
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    const Tensor x = ref::make({600, 300}, dt, v);
    const Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);  // same values, column-major
    const Tensor wide = ref::make({600, 600}, dt, std::vector<double>(600 * 600, 0.5));
    Tensor stepped = wide.slice(1, 0, 600, 2);  // every second column
    stepped.copy_(x);
    for (const auto& [name, fn] : ops) {
      INFO(name << " " << ref::str(dt));
      const Array want = ref::read(fn(x));
      CHECK(ref::read(fn(xt)).v == want.v);
      CHECK(ref::read(fn(stepped)).v == want.v);
      // Rows of 37: contiguous runs with a 5-value tail each, against column-major.
      const Tensor rows = x.slice(1, 0, 37);
      CHECK(ref::read(fn(rows)).v == ref::read(fn(rows.transpose(0, 1).contiguous().transpose(0, 1))).v);
    }
  }
}

// Half add, sub, mul and div on contiguous runs (and a broadcast scalar) take a
// one-pass loop where the CPU has one; every other layout takes the float blocks or
// the strided loop. All compute in float32 and round once, so they agree bit for bit
// (a NaN's payload aside: which operand's NaN a NaN + NaN returns is not kept).
// Rows of 37 and of 7 out of 1000 x 40 values: runs with whole vectors and a tail,
// and runs shorter than one vector; subnormal, overflowing and zero divisors among
// them.
TEST_CASE("half arithmetic gives the same bits in every layout", "[ops][binary]") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-300.0, 300.0);
  std::vector<double> va(1000 * 40), vb(1000 * 40);
  for (size_t i = 0; i < va.size(); ++i) {
    va[i] = u(rng);
    vb[i] = i % 97 == 0 ? 0.0 : i % 89 == 0 ? 1e-6 : u(rng);
  }
  const std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return ember::add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return ember::sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return ember::mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return ember::div(a, b); }}};
  for (DType dt : {kFloat16, kBFloat16})
    for (int64_t cols : {37, 7}) {
      const Tensor a = ref::make({1000, 40}, dt, va).slice(1, 0, cols), b = ref::make({1000, 40}, dt, vb).slice(1, 0, cols);
      const Tensor at = a.transpose(0, 1).contiguous().transpose(0, 1), bt = b.transpose(0, 1).contiguous().transpose(0, 1);
      const Tensor s = ref::make({}, dt, {1.7});
      for (const auto& [name, fn] : ops) {
        INFO(name << " " << ref::str(dt) << " rows of " << cols);
        const Array got = ref::read(fn(a, b)), want = ref::read(fn(at, bt));
        int64_t differ = 0;
        for (size_t i = 0; i < got.v.size(); ++i) differ += !(got.v[i] == want.v[i] || (std::isnan(got.v[i]) && std::isnan(want.v[i])));
        CHECK(differ == 0);
        CHECK(ref::read(fn(a, s)).v == ref::read(fn(at, s)).v);
        CHECK(ref::read(fn(s, b)).v == ref::read(fn(s, bt)).v);
      }
    }
}

TEST_CASE("binary ops match the float64 reference with PyTorch's type promotion", "[ops][binary]") {
  std::mt19937_64 rng(202);
  for (const BinaryRow& row : kBinaryRows) {
    for (const Config& c : configs()) {
      const DType out = result_dtype(row, c.promoted);
      // Comparisons and true division compute in the promoted (or float32) dtype.
      const DType compute = row.kind == BKind::truediv && !is_floating(c.promoted) ? kFloat32 : c.promoted;
      INFO(row.name << " " << ref::str(c.a) << " with " << ref::str(c.b)
                    << (c.bk == Operand::dim ? "" : c.bk == Operand::zero_dim ? " (0-dim)" : " (C++ number)"));
      if (!supports(row, compute)) {
        Tensor x = ref::make({2}, c.a, {1, 0});
        if (c.bk == Operand::scalar) CHECK_THROWS_AS(row.fn_ts(x, Scalar(true)), Error);
        else CHECK_THROWS_AS(row.fn(x, ref::make({2}, c.b, {0, 1})), Error);
        continue;
      }
      std::vector<ShapePair> shapes;
      if (c.bk == Operand::dim) {
        shapes = kBinaryShapes;
        if (c.a == c.b && (c.a == kFloat32 || c.a == kInt64)) {
          shapes.push_back({{257, 131}, {257, 131}});  // threaded paths; threads start mid-row
          shapes.push_back({{257, 131}, {131}});
        }
      } else {
        for (const Shape& s : kScalarPartnerShapes)
          if (!(c.bk == Operand::zero_dim && s.empty())) shapes.push_back({s, {}});
      }
      for (const ShapePair& sp : shapes)
        for (const LayoutPair& lp : kLayoutPairs) {
          if (!ref::layout_applies(lp.a, sp.a)) continue;
          if (c.bk == Operand::dim && !ref::layout_applies(lp.b, sp.b)) continue;
          if (c.bk != Operand::dim && lp.b != Layout::contiguous) continue;
          if (ref::numel(sp.a) > 1000 && lp.b != Layout::contiguous) continue;
          if (ref::numel(sp.a) > 1000 && lp.a != Layout::contiguous && lp.a != Layout::transposed) continue;
          // Both orders: a op b with the row's (first, second) domains, then b op a.
          for (int order = 0; order < 2; ++order) {
            Tensor x, y;
            Scalar s;
            Array X, Y;
            const Domain& d0 = row.dom.a;
            const Domain& d1 = row.dom.b;
            if (c.bk == Operand::scalar) {
              x = input(sp.a, c.a, lp.a, order == 0 ? d0 : d1, rng);
              s = draw_scalar(c.b, order == 0 ? d1 : d0, rng);
              X = ref::read(x);
              Y = Array{{}, {s.to_double()}};
            } else {
              x = input(sp.a, c.a, lp.a, order == 0 ? d0 : d1, rng);
              y = input(sp.b, c.b, c.bk == Operand::dim ? lp.b : Layout::contiguous, order == 0 ? d1 : d0, rng);
              X = ref::read(x);
              Y = ref::read(y);
            }
            Tensor got;
            Array want;
            if (order == 0) {
              got = c.bk == Operand::scalar ? row.fn_ts(x, s) : row.fn(x, y);
              want = expected_binary(row, X, Y, compute, out);
            } else {
              got = c.bk == Operand::scalar ? row.fn_st(s, x) : row.fn(y, x);
              want = expected_binary(row, Y, X, compute, out);
            }
            INFO("order " << order << ", a = " << describe(x) << (c.bk == Operand::scalar ? "" : ", b = " + describe(y)));
            CHECK(got.dtype() == out);
            CHECK(got.shape() == ref::broadcast(sp.a, sp.b));
            CHECK_MATCH(got, want, tol_of(out));
            if (order == 0 && c.bk != Operand::scalar && lp.a == Layout::transposed)
              CHECK_MATCH(row.method(x, y), want, tol_of(out));
          }
        }
    }
  }
}

TEST_CASE("in-place binary ops write into views, convert, and reject impossible casts", "[ops][binary][inplace]") {
  std::mt19937_64 rng(303);
  const std::vector<ShapePair> shapes = {{{}, {}}, {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{3, 4, 5}, {4, 1}},
                                         {{2, 3}, {}}, {{0, 3}, {3}}, {{4, 5}, {1, 1}}};
  const Layout out_layouts[] = {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::permuted};
  for (const BinaryRow& row : kBinaryRows) {
    for (const Config& c : configs()) {
      const DType compute = row.kind == BKind::truediv && !is_floating(c.promoted) ? kFloat32 : c.promoted;
      if (!supports(row, compute)) continue;
      const DType result = result_dtype(row, c.promoted);
      INFO(row.name << "_ " << ref::str(c.a) << " with " << ref::str(c.b));
      for (const ShapePair& sp0 : shapes) {
        ShapePair sp = sp0;
        if (c.bk != Operand::dim) sp.b = {};
        if (c.bk == Operand::zero_dim && sp.a.empty()) continue;
        // A 0-dim tensor beside a dimensioned one changes the promotion: that is the zero_dim configs' job.
        if (c.bk == Operand::dim && sp.b.empty() && !sp.a.empty()) continue;
        for (Layout l : out_layouts) {
          if (!ref::layout_applies(l, sp.a)) continue;
          Tensor x = input(sp.a, c.a, l, row.dom.a, rng);
          const Array before = read_storage(x);
          const Array X = ref::read(x);
          Tensor y;
          Scalar s;
          Array Y;
          if (c.bk == Operand::scalar) {
            s = draw_scalar(c.b, row.dom.b, rng);
            Y = Array{{}, {s.to_double()}};
          } else {
            y = input(sp.b, c.b, Layout::contiguous, row.dom.b, rng);
            Y = ref::read(y);
          }
          INFO("self = " << describe(x) << " layout " << ref::layout_name(l));
          auto call = [&]() -> Tensor& { return c.bk == Operand::scalar ? row.inplace_s(x, s) : row.inplace(x, y); };
          if (!can_cast_by_hand(result, c.a)) {
            CHECK_THROWS_AS(call(), DTypeError);
            CHECK(read_storage(x).v == before.v);
            continue;
          }
          Tensor& r = call();
          CHECK(&r == &x);
          CHECK(x.dtype() == c.a);
          CHECK(x.shape() == sp.a);
          Array want = expected_binary(row, X, Y, compute, result);
          for (double& v : want.v) v = ref::cast(v, c.a);
          const ref::Tol tol = is_floating(c.a) ? ref::tol_for(c.a) : ref::Tol{0, 0};
          CHECK_MATCH(x, want, tol);
          // Elements of the storage outside the view are untouched.
          Array outside = before;
          for (int64_t p : positions(x)) outside.v[p] = 0;
          Array after = read_storage(x);
          for (int64_t p : positions(x)) after.v[p] = 0;
          CHECK(after.v == outside.v);
        }
      }
    }
  }
  // The broadcast shape must be self's shape.
  Tensor a = zeros({1, 3});
  CHECK_THROWS_AS(a.add_(zeros({2, 3})), ShapeError);
  CHECK_THROWS_AS(a.mul_(zeros({4})), ShapeError);
}

TEST_CASE("in-place ops on aliased operands give the mathematical answer", "[ops][binary][inplace]") {
  std::mt19937_64 rng(404);
  for (int64_t n : {4, 37, 200}) {
    for (DType dt : {kFloat32, kInt64, kFloat16}) {
      INFO(n << "x" << n << " " << ref::str(dt));
      Tensor a = ref::random_tensor({n, n}, dt, Layout::contiguous, rng, -10, 10);
      const Array A = ref::read(a);
      Array want{{n, n}, std::vector<double>(n * n)};
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) want.v[i * n + j] = ref::cast(A.v[i * n + j] + A.v[j * n + i], dt);
      Tensor a2 = a.clone();
      a.add_(a.t());
      CHECK_MATCH(a, want, ref::tol_for(dt));
      // Symmetric result: the op read every input before writing over it.
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) want.v[i * n + j] = ref::cast(A.v[i * n + j] * A.v[j * n + i], dt);
      a2.mul_(a2.t());
      CHECK_MATCH(a2, want, ref::tol_for(dt));
    }
  }
  // Self with a broadcast row of itself, and with itself (full overlap).
  Tensor m = ref::make({3, 2}, kFloat32, {1, 2, 3, 4, 5, 6});
  m.sub_(m[0]);
  CHECK(ref::read(m).v == std::vector<double>{0, 0, 2, 2, 4, 4});
  Tensor q = ref::make({2, 2}, kInt32, {1, 2, 3, 4});
  q.mul_(q);
  CHECK(ref::read(q).v == std::vector<double>{1, 4, 9, 16});
  // Shifted overlap: x[1:] += x[:-1].
  Tensor v = ref::make({5}, kInt64, {1, 2, 3, 4, 5});
  Tensor tail = v.slice(0, 1, std::nullopt);
  tail.add_(v.slice(0, 0, 4));
  CHECK(ref::read(v).v == std::vector<double>{1, 3, 5, 7, 9});
}

TEST_CASE("binary_out writes into a given non-contiguous output", "[ops][binary]") {
  std::mt19937_64 rng(505);
  Tensor a = ref::random_tensor({4, 6}, kFloat32, Layout::contiguous, rng, -3, 3);
  Tensor b = ref::random_tensor({6}, kInt32, Layout::contiguous, rng, -3, 3);
  Tensor base = zeros({6, 4}, kFloat64);
  Tensor out = base.t();
  binary_out(BinaryOp::mul, out, a, b);
  const Array A = ref::read(a), B = ref::read(b);
  Array want{{4, 6}, {}};
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) want.v.push_back(static_cast<float>(A.v[i * 6 + j] * B.v[j]));
  CHECK(out.dtype() == kFloat64);
  CHECK_MATCH(out, want, ref::Tol{1e-6, 0});
  Tensor bad = zeros({4, 6}, kInt32);
  CHECK_THROWS_AS(binary_out(BinaryOp::add, bad, a, b), DTypeError);
  Tensor flags = zeros({4, 6}, kBool);
  binary_out(BinaryOp::gt, flags, a, b);
  for (size_t i = 0; i < want.v.size(); ++i) want.v[i] = A.v[i] > B.v[i % 6];
  CHECK_MATCH(flags, want, ref::Tol{0, 0});
}

TEST_CASE("NaN propagates through maximum/minimum and compares unequal", "[ops][binary]") {
  for (DType dt : kFloatTypes) {
    INFO(ref::str(dt));
    Tensor a = ref::make({4}, dt, {NAN, 1, NAN, -INFINITY});
    Tensor b = ref::make({4}, dt, {2, NAN, NAN, 0});
    CHECK_MATCH(maximum(a, b), (Array{{4}, {NAN, NAN, NAN, 0}}), ref::Tol{0, 0});
    CHECK_MATCH(minimum(a, b), (Array{{4}, {NAN, NAN, NAN, -INFINITY}}), ref::Tol{0, 0});
    CHECK(ref::read(eq(a, b)).v == std::vector<double>{0, 0, 0, 0});
    CHECK(ref::read(ne(a, b)).v == std::vector<double>{1, 1, 1, 1});
    CHECK(ref::read(lt(a, b)).v == std::vector<double>{0, 0, 0, 1});
    CHECK(ref::read(eq(a, a)).v == std::vector<double>{0, 1, 0, 1});
  }
}

TEST_CASE("operators call the ops", "[ops][binary]") {
  Tensor a = ref::make({3}, kFloat32, {1, 2, 3});
  Tensor b = ref::make({3}, kFloat32, {4, 5, 6});
  CHECK(ref::read(a + b).v == std::vector<double>{5, 7, 9});
  CHECK(ref::read(a - b).v == std::vector<double>{-3, -3, -3});
  CHECK(ref::read(a * b).v == std::vector<double>{4, 10, 18});
  CHECK(ref::read(b / a).v == std::vector<double>{4, 2.5, 2});
  CHECK(ref::read(-a).v == std::vector<double>{-1, -2, -3});
  CHECK(ref::read(2 - a).v == std::vector<double>{1, 0, -1});
  CHECK(ref::read(a / 2).v == std::vector<double>{0.5, 1, 1.5});
  CHECK(ref::read(a == 2).v == std::vector<double>{0, 1, 0});
  CHECK(ref::read(a != 2).v == std::vector<double>{1, 0, 1});
  CHECK(ref::read(a < 2).v == std::vector<double>{1, 0, 0});
  CHECK(ref::read(a <= 2).v == std::vector<double>{1, 1, 0});
  CHECK(ref::read(a > 2).v == std::vector<double>{0, 0, 1});
  CHECK(ref::read(2 >= a).v == std::vector<double>{1, 1, 0});
  Tensor c = a.clone();
  c += b;
  c -= 1;
  c *= 2;
  c /= a;
  CHECK(ref::read(c).v == std::vector<double>{8, 6, static_cast<float>(16.0 / 3.0)});
  CHECK((ref::make({2}, kInt32, {1, 2}) / ref::make({2}, kInt32, {2, 2})).dtype() == kFloat32);
  CHECK((ref::make({2}, kInt32, {1, 2}) * 2.5).dtype() == kFloat32);
}

TEST_CASE("where selects with broadcasting and promotion", "[ops][where]") {
  std::mt19937_64 rng(606);
  struct Case {
    Shape c, a, b;
    DType da, db;
    Operand bk;
    DType want;
  };
  const std::vector<Case> cases = {
      {{4, 5}, {4, 5}, {4, 5}, kFloat32, kFloat32, Operand::dim, kFloat32},
      {{3, 1}, {1, 4}, {4}, kInt32, kFloat16, Operand::dim, kFloat16},
      {{2, 3, 4}, {3, 4}, {}, kFloat16, kFloat64, Operand::zero_dim, kFloat16},
      {{5}, {5}, {}, kFloat16, kFloat64, Operand::scalar, kFloat16},
      {{5}, {5}, {}, kInt8, kFloat64, Operand::scalar, kFloat32},
      {{6}, {6}, {6}, kInt8, kUInt8, Operand::dim, kInt32},
      {{0, 3}, {1, 3}, {3}, kBool, kInt64, Operand::dim, kInt64},
      {{}, {}, {}, kBFloat16, kBFloat16, Operand::dim, kBFloat16},
      {{4, 4}, {4, 4}, {4, 4}, kBool, kBool, Operand::dim, kBool},
      {{4, 1}, {}, {1, 3}, kFloat64, kFloat32, Operand::dim, kFloat32},
  };
  for (const Case& k : cases)
    for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
      if (!ref::layout_applies(l, k.c) || !ref::layout_applies(l, k.a)) continue;
      Tensor cond = ref::random_tensor(k.c, kBool, l, rng, 0, 1);
      Tensor a = ref::random_tensor(k.a, k.da, l, rng, -5, 5);
      Tensor b;
      Scalar s;
      Array B;
      if (k.bk == Operand::scalar) {
        s = Scalar(0.25);
        B = Array{{}, {0.25}};
      } else {
        b = ref::random_tensor(k.b, k.db, Layout::contiguous, rng, -5, 5);
        B = ref::read(b);
      }
      INFO("cond " << describe(cond) << ", a " << describe(a));
      Tensor got = k.bk == Operand::scalar ? where(cond, a, s) : where(cond, a, b);
      const Array C = ref::read(cond), A = ref::read(a);
      Array want;
      want.shape = ref::broadcast(ref::broadcast(k.c, k.a), k.b);
      for (int64_t i = 0; i < ref::numel(want.shape); ++i) {
        const auto idx = ref::unravel(i, want.shape);
        want.v.push_back(ref::cast(C.at_broadcast(idx) ? A.at_broadcast(idx) : B.at_broadcast(idx), k.want));
      }
      CHECK(got.dtype() == k.want);
      CHECK_MATCH(got, want, ref::Tol{0, 0});
      if (k.bk == Operand::scalar) {  // scalar first
        Tensor got2 = where(cond, s, a);
        for (int64_t i = 0; i < ref::numel(want.shape); ++i)
          want.v[i] = ref::cast(C.v[i] ? 0.25 : A.v[i], k.want);
        CHECK(got2.dtype() == k.want);
        CHECK_MATCH(got2, want, ref::Tol{0, 0});
      }
    }
  CHECK_THROWS_AS(where(zeros({2}), zeros({2}), zeros({2})), DTypeError);
  CHECK_THROWS_AS(where(zeros({2}, kBool), zeros({3}), zeros({2})), ShapeError);
}

TEST_CASE("clamp bounds values and keeps NaN", "[ops][clamp]") {
  std::mt19937_64 rng(707);
  struct Case {
    std::optional<Scalar> lo, hi;
  };
  const std::vector<Case> bounds = {{Scalar(-1), Scalar(2)}, {Scalar(0.5), std::nullopt}, {std::nullopt, Scalar(1.5)},
                                    {Scalar(3), Scalar(1)},  {Scalar(-2.25), Scalar(2.75)}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt32, kInt64})
    for (const Case& b : bounds)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::expanded}) {
        Tensor x = ref::random_tensor({5, 7}, dt, l, rng, -4, 4);
        const bool float_bound = (b.lo && b.lo->is_floating()) || (b.hi && b.hi->is_floating());
        // PyTorch 1.13: clamp promotes with its bounds, so an int tensor with a float bound gives float32.
        const DType out = !is_floating(dt) && float_bound ? kFloat32 : dt;
        INFO(describe(x) << " lo " << (b.lo ? b.lo->str() : "none") << " hi " << (b.hi ? b.hi->str() : "none"));
        Tensor y = clamp(x, b.lo, b.hi);
        Array want = ref::read(x);
        for (double& v : want.v) {
          if (b.lo) v = std::max(v, ref::cast(b.lo->to_double(), out));
          if (b.hi) v = std::min(v, ref::cast(b.hi->to_double(), out));
        }
        CHECK(y.dtype() == out);
        CHECK_MATCH(y, want, ref::Tol{0, 0});
        CHECK_MATCH(x.clamp(b.lo, b.hi), want, ref::Tol{0, 0});
        if (l != Layout::expanded && out == dt) {
          Tensor z = x;
          z.clamp_(b.lo, b.hi);
          CHECK_MATCH(x, want, ref::Tol{0, 0});
        }
      }
  Tensor n = ref::make({3}, kFloat32, {NAN, -5, 5});
  CHECK_MATCH(clamp(n, Scalar(-1), Scalar(1)), (Array{{3}, {NAN, -1, 1}}), ref::Tol{0, 0});
  CHECK_THROWS_AS(clamp(n, std::nullopt, std::nullopt), ValueError);
}

TEST_CASE("softmax and log_softmax match the float64 reference", "[ops][softmax]") {
  std::mt19937_64 rng(808);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{}, {0, -1}}, {{0}, {0}}, {{7}, {0, -1}}, {{4, 5}, {0, 1, -1}}, {{2, 3, 4}, {0, 1, 2, -2}},
      {{1, 9}, {0, 1}}, {{3, 0, 2}, {0, 1, 2}}, {{64, 300}, {1, 0}}};
  for (DType dt : kFloatTypes)
    for (const auto& [shape, dims] : cases)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded}) {
        if (!ref::layout_applies(l, shape)) continue;
        if (ref::numel(shape) > 1000 && l != Layout::contiguous && l != Layout::transposed) continue;
        for (int64_t dim : dims)
          for (bool log : {false, true}) {
            Tensor x = ref::random_tensor(shape, dt, l, rng, -6, 6);
            INFO((log ? "log_softmax(" : "softmax(") << describe(x) << ", " << dim << ")");
            Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
            CHECK(y.dtype() == dt);
            const Array X = ref::read(x);
            Array want{X.shape, std::vector<double>(X.v.size())};
            const int64_t nd = static_cast<int64_t>(shape.size());
            const int64_t d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
            const int64_t len = nd == 0 ? 1 : shape[d];
            int64_t outer = 1, inner = 1;
            for (int64_t q = 0; q < d; ++q) outer *= shape[q];
            for (int64_t q = d + 1; q < nd; ++q) inner *= shape[q];
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t in = 0; in < inner; ++in) {
                auto at = [&](int64_t k) { return o * len * inner + k * inner + in; };
                double m = -INFINITY, s = 0;
                for (int64_t k = 0; k < len; ++k) m = std::max(m, X.v[at(k)]);
                for (int64_t k = 0; k < len; ++k) s += std::exp(X.v[at(k)] - m);
                for (int64_t k = 0; k < len; ++k)
                  want.v[at(k)] = log ? X.v[at(k)] - m - std::log(s) : std::exp(X.v[at(k)] - m) / s;
              }
            const ref::Tol tol = ref::tol_for(dt);
            CHECK_MATCH(y, want, (ref::Tol{tol.rtol, log ? tol.rtol : tol.atol}));
          }
      }
  // Large logits do not overflow; an all -inf row gives NaN as in PyTorch.
  Tensor big = ref::make({2, 2}, kFloat32, {1000, 1001, -INFINITY, -INFINITY});
  const double e = 1 / (1 + std::exp(1.0));
  CHECK_MATCH(softmax(big, 1), (Array{{2, 2}, {e, 1 - e, NAN, NAN}}), ref::tol_for(kFloat32));
  // log_softmax may compute x - (m + log s), as PyTorch does: exact to a few ulps of the largest logit.
  CHECK_MATCH(log_softmax(big, 1), Array{{2, 2}, {std::log(e), std::log(1 - e), NAN, NAN}},
              ref::Tol{1e-5, 4 * 1001 * std::ldexp(1.0, -24)});
  CHECK_THROWS_AS(softmax(zeros({3}, kInt32), 0), DTypeError);
  CHECK_THROWS_AS(softmax(zeros({3}), 1), IndexError);
}
