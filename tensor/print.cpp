// Printing in PyTorch's style: `tensor([[1., 2.],\n        [3., 4.]])`. A formatter
// looks at all printed values once to choose integer mode ("1."), fixed ("0.1235")
// or scientific ("1.0000e+10") and a common width; long tensors are summarized
// with "..." after 1000 elements, three items kept at each edge; rows wrap at 80
// columns. Non-default dtypes and non-CPU devices are added as suffixes.
#include <cmath>
#include <cstdio>

#include "kernels/base/dispatch.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember {
namespace {

// Four digits after the point (PyTorch's default precision) are in the "%.4f" and
// "%.4e" formats below.
constexpr int kLineWidth = 80, kEdgeItems = 3, kThreshold = 1000;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "[" + s + "]", built by appending: GCC 12 warns (-Wrestrict, a false positive, GCC
// bug 105329) on a string literal added in front of a temporary string.
std::string bracketed(const std::string& s) {
  std::string out = "[";
  out += s;
  out += ']';
  return out;
}

std::string special(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

class Formatter {
 public:
  Formatter(const std::vector<double>& values, DType dt) : floating_(is_floating(dt)), bool_(dt == kBool) {
    if (!floating_) {
      for (double v : values) width_ = std::max<size_t>(width_, plain(v).size());
      return;
    }
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;
    sci_ = (int_mode_ ? (hi / lo > 1000. || hi > 1e8) : (hi / lo > 1000. || hi > 1e8 || lo < 1e-4));
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      size_t w = sci_ ? fmt("%.4e", v).size() : int_mode_ ? fmt("%.0f", v).size() + 1 : fmt("%.4f", v).size();
      width_ = std::max(width_, w);
    }
  }
  size_t width() const { return width_; }
  std::string format(double v) const {
    std::string s;
    if (!floating_) s = plain(v);
    else if (!std::isfinite(v)) s = special(v);
    else if (sci_) s = fmt("%.4e", v);
    else if (int_mode_) s = fmt("%.0f", v) + ".";
    else s = fmt("%.4f", v);
    return width_ > s.size() ? std::string(width_ - s.size(), ' ') + s : s;
  }

 private:
  std::string plain(double v) const {
    if (bool_) return v != 0 ? "True" : "False";
    return fmt("%.0f", v);
  }
  bool floating_, bool_;
  bool int_mode_ = true, sci_ = false;
  size_t width_ = 1;
};

// Values of a host tensor as doubles (int64 beyond 2^53 would lose digits; such
// values print rounded, which PyTorch avoids, but they are rare in practice).
std::vector<double> values_of(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<double> out(c.numel());
  dispatch(c.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(c.data_ptr());
    for (int64_t i = 0; i < c.numel(); ++i) out[i] = static_cast<double>(static_cast<acc_t<T>>(p[i]));
  });
  return out;
}

// The elements the summary will show, for the formatter to size them.
void summarized(const Tensor& t, bool summarize, std::vector<Tensor>& parts) {
  if (t.dim() == 0) { parts.push_back(t); return; }
  const int64_t n = t.shape()[0];
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) summarized(t[i], true, parts);
    for (int64_t i = n - kEdgeItems; i < n; ++i) summarized(t[i], true, parts);
  } else {
    if (t.dim() == 1) { parts.push_back(t); return; }
    for (int64_t i = 0; i < n; ++i) summarized(t[i], summarize, parts);
  }
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? sep : "") + xs[i];
  return s;
}

std::string vector_str(const Tensor& t, int indent, bool summarize, const Formatter& f) {
  const size_t elem_len = f.width() + 2;
  const size_t per_line = std::max<size_t>(1, (kLineWidth - indent) / elem_len);
  std::vector<std::string> data;
  const std::vector<double> v = values_of(t);
  const int64_t n = static_cast<int64_t>(v.size());
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) data.push_back(f.format(v[i]));
    data.push_back(" ...");
    for (int64_t i = n - kEdgeItems; i < n; ++i) data.push_back(f.format(v[i]));
  } else {
    for (double x : v) data.push_back(f.format(x));
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < data.size(); i += per_line)
    lines.push_back(join(std::vector<std::string>(data.begin() + i, data.begin() + std::min(data.size(), i + per_line)),
                         ", "));
  return bracketed(join(lines, ",\n" + std::string(indent + 1, ' ')));
}

std::string tensor_str(const Tensor& t, int indent, bool summarize, const Formatter& f) {
  if (t.dim() == 0) return f.format(values_of(t)[0]);
  if (t.dim() == 1) return vector_str(t, indent, summarize, f);
  std::vector<std::string> slices;
  const int64_t n = t.shape()[0];
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) slices.push_back(tensor_str(t[i], indent + 1, summarize, f));
    slices.push_back("...");
    for (int64_t i = n - kEdgeItems; i < n; ++i) slices.push_back(tensor_str(t[i], indent + 1, summarize, f));
  } else {
    for (int64_t i = 0; i < n; ++i) slices.push_back(tensor_str(t[i], indent + 1, summarize, f));
  }
  std::string sep = ",";
  sep.append(size_t(t.dim() - 1), '\n').append(size_t(indent + 1), ' ');
  return bracketed(join(slices, sep));
}

}  // namespace

std::string Tensor::str() const {
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  // PyTorch checks meta before emptiness: an empty meta tensor prints as `...`.
  if (device().is_meta()) {
    body = "...";
    std::string s = "size=(";
    for (int64_t i = 0; i < dim(); ++i) s += (i ? ", " : "") + std::to_string(shape()[i]);
    suffixes.push_back(s + (dim() == 1 ? ",)" : ")"));
  } else if (numel() == 0) {
    body = "[]";
    if (dim() != 1) {
      std::string s = "size=(";
      for (int64_t i = 0; i < dim(); ++i) s += (i ? ", " : "") + std::to_string(shape()[i]);
      suffixes.push_back(s + ")");
    }
  } else {
    Tensor host = cpu();
    const bool summarize = host.numel() > kThreshold;
    std::vector<Tensor> parts;
    summarized(host, summarize, parts);
    std::vector<double> shown;
    for (const Tensor& p : parts) {
      auto v = values_of(p);
      if (summarize && p.dim() == 1 && p.numel() > 2 * kEdgeItems) {
        shown.insert(shown.end(), v.begin(), v.begin() + kEdgeItems);
        shown.insert(shown.end(), v.end() - kEdgeItems, v.end());
      } else {
        shown.insert(shown.end(), v.begin(), v.end());
      }
    }
    body = tensor_str(host, indent, summarize, Formatter(shown, dtype()));
  }
  // Without values to show, only float32 (the default dtype) goes unnamed, as in PyTorch.
  const bool no_values = numel() == 0 || device().is_meta();
  if (dtype() != kFloat32 && (no_values || (dtype() != kInt64 && dtype() != kBool)))
    suffixes.push_back(std::string("dtype=ember.") + dtype_name(dtype()));
  std::string out = prefix + body;
  const size_t nl = out.rfind('\n');
  size_t last_line = nl == std::string::npos ? out.size() + 2 : out.size() - nl + 1;  // PyTorch's arithmetic
  for (const std::string& s : suffixes) {
    if (last_line + s.size() + 2 > static_cast<size_t>(kLineWidth)) {
      out += ",\n" + std::string(indent, ' ') + s;
      last_line = indent + s.size();
    } else {
      out += ", " + s;
      last_line += s.size() + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
