// The reference helpers: raw-memory reads and writes, random inputs in several
// memory layouts, and tolerant comparison. See reference.h.
#include "support/reference.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/base/half.h"

namespace ref {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}

Shape broadcast(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    const int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

double load(const void* p, DType dt) {
  switch (dt) {
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::Float16: { uint16_t b; std::memcpy(&b, p, 2); return ember::half_bits_to_float(b); }
    case DType::BFloat16: { uint16_t b; std::memcpy(&b, p, 2); return ember::bfloat16_bits_to_float(b); }
    case DType::Int8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::UInt8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::Bool: { uint8_t v; std::memcpy(&v, p, 1); return v != 0; }
  }
  return 0;
}

void store(void* p, DType dt, double v) {
  switch (dt) {
    case DType::Float32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::Float64: std::memcpy(p, &v, 8); return;
    case DType::Float16: { uint16_t b = ember::float_to_half_bits(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::BFloat16: { uint16_t b = ember::float_to_bfloat16_bits(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::Int8: { int8_t x = static_cast<int8_t>(static_cast<int64_t>(v)); std::memcpy(p, &x, 1); return; }
    case DType::UInt8: { uint8_t x = static_cast<uint8_t>(static_cast<int64_t>(v)); std::memcpy(p, &x, 1); return; }
    case DType::Int32: { int32_t x = static_cast<int32_t>(static_cast<int64_t>(v)); std::memcpy(p, &x, 4); return; }
    case DType::Int64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); return; }
    case DType::Bool: { uint8_t x = v != 0; std::memcpy(p, &x, 1); return; }
  }
}

double cast(double v, DType dt) {
  if (std::isnan(v) && !ember::is_floating(dt)) return dt == DType::Bool ? 1 : 0;
  unsigned char buf[8];
  store(buf, dt, v);
  return load(buf, dt);
}

double Array::at_broadcast(const std::vector<int64_t>& idx) const {
  int64_t off = 0;
  const size_t lead = idx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + (shape[d] == 1 ? 0 : idx[lead + d]);
  return v[off];
}

Array expand(const Array& a, const Shape& shape) {
  Array out{shape, std::vector<double>(numel(shape))};
  if (out.v.empty()) return out;
  const size_t nd = shape.size(), lead = nd - a.shape.size();
  std::vector<int64_t> st(nd, 0);  // a's strides over `shape`, 0 where broadcast
  int64_t s = 1;
  for (size_t d = a.shape.size(); d-- > 0;) {
    st[lead + d] = a.shape[d] == 1 ? 0 : s;
    s *= a.shape[d];
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (double& x : out.v) {
    x = a.v[off];
    for (size_t d = nd; d-- > 0;) {
      off += st[d];
      if (++idx[d] < shape[d]) break;
      off -= st[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

Array read(const Tensor& t) {
  Array a;
  a.shape = t.shape();
  const int64_t n = numel(a.shape);
  a.v.resize(n);
  if (n == 0) return a;
  if (!t.device().is_cpu()) throw std::runtime_error("ref::read needs a CPU tensor");
  const size_t es = ember::dtype_size(t.dtype());
  const char* base = static_cast<const char*>(t.storage()->data()) + t.storage_offset() * es;
  const int64_t nd = t.dim();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * t.stride()[d];
    a.v[i] = load(base + off * static_cast<int64_t>(es), t.dtype());
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < a.shape[d]) break;
      idx[d] = 0;
    }
  }
  return a;
}

Tensor make(const Shape& shape, DType dt, const std::vector<double>& values) {
  Tensor t = ember::empty(shape, ember::TensorOptions(dt));
  const size_t es = ember::dtype_size(dt);
  char* p = static_cast<char*>(t.storage()->data());
  for (size_t i = 0; i < values.size(); ++i) store(p + i * es, dt, values[i]);
  return t;
}

std::vector<double> random_values(int64_t n, DType dt, std::mt19937_64& rng, double lo, double hi) {
  std::vector<double> v(n);
  if (dt == DType::Bool) {
    std::bernoulli_distribution coin(0.5);
    for (auto& x : v) x = coin(rng);
  } else if (ember::is_floating(dt)) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (auto& x : v) x = cast(u(rng), dt);
  } else {
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(std::ceil(lo)), static_cast<int64_t>(std::floor(hi)));
    for (auto& x : v) x = static_cast<double>(u(rng));
  }
  return v;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::contiguous: return "contiguous";
    case Layout::transposed: return "transposed";
    case Layout::sliced: return "sliced";
    case Layout::expanded: return "expanded";
    case Layout::permuted: return "permuted";
  }
  return "?";
}

bool layout_applies(Layout l, const Shape& shape) {
  switch (l) {
    case Layout::contiguous: return true;
    case Layout::transposed: case Layout::permuted: return shape.size() >= 2;
    case Layout::sliced: case Layout::expanded: return !shape.empty();
  }
  return false;
}

Tensor random_tensor(const Shape& shape, DType dt, Layout l, std::mt19937_64& rng, double lo, double hi) {
  return layout_tensor(shape, dt, l, [&](int64_t n) { return random_values(n, dt, rng, lo, hi); });
}

Tensor layout_tensor(const Shape& shape, DType dt, Layout l, const std::function<std::vector<double>(int64_t)>& values) {
  Shape base = shape;
  const int64_t nd = static_cast<int64_t>(shape.size());
  switch (l) {
    case Layout::contiguous: break;
    case Layout::transposed: std::swap(base[nd - 1], base[nd - 2]); break;
    case Layout::sliced: base[0] = 2 * shape[0] + 1; break;
    case Layout::expanded: base[0] = 1; break;
    case Layout::permuted: std::reverse(base.begin(), base.end()); break;
  }
  Tensor b = make(base, dt, values(numel(base)));
  switch (l) {
    case Layout::contiguous: return b;
    case Layout::transposed: return b.transpose(-1, -2);
    case Layout::sliced: return b.slice(0, 1, std::nullopt, 2);
    case Layout::expanded: return b.expand(shape);
    case Layout::permuted: {
      Shape dims(nd);
      for (int64_t d = 0; d < nd; ++d) dims[d] = nd - 1 - d;
      return b.permute(dims);
    }
  }
  return b;
}

Tol tol_for(DType dt) {
  switch (dt) {
    case DType::Float32: return {1e-5, 1e-6};
    case DType::Float64: return {1e-12, 1e-12};
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {1e-2, 1e-4};
    default: return {0, 0};
  }
}

std::string str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::string str(DType d) { return ember::dtype_name(d); }

namespace {
std::string compare_impl(const Tensor& got, const Array& want, const std::function<double(size_t)>& allowed) {
  std::ostringstream os;
  if (got.shape() != want.shape) {
    os << "shape " << str(got.shape()) << " != expected " << str(want.shape);
    return os.str();
  }
  const Array g = read(got);
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < g.v.size(); ++i) {
    const double x = g.v[i], y = want.v[i];
    bool ok;
    if (std::isnan(x) || std::isnan(y)) ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y)) ok = x == y;
    else ok = std::fabs(x - y) <= allowed(i);
    if (!ok && bad++ == 0) first = static_cast<int64_t>(i);
  }
  if (!bad) return "";
  os.precision(17);
  os << bad << " of " << g.v.size() << " elements differ; first at index " << str(unravel(first, want.shape))
     << ": got " << g.v[first] << ", expected " << want.v[first] << " (allowed error " << allowed(first)
     << ", dtype " << str(got.dtype()) << ")";
  return os.str();
}
}  // namespace

std::string compare(const Tensor& got, const Array& want, Tol tol) {
  return compare_impl(got, want, [&](size_t i) { return tol.atol + tol.rtol * std::fabs(want.v[i]); });
}

std::string compare_within(const Tensor& got, const Array& want, const std::vector<double>& allowed) {
  return compare_impl(got, want, [&](size_t i) { return allowed[i]; });
}

}  // namespace ref
