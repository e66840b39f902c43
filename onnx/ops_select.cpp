// ONNX ops that pick or place elements at positions worked out on the host:
// NonZero, Compress, NonMaxSuppression and Unique (whose output sizes depend on
// the data), ReverseSequence
// (each batch entry's first lens[b] steps reversed) and MaxUnpool (pooled values
// written back at MaxPool's indices). The positions are small host vectors; the
// data moves with index_select and stack on the model's device, except
// MaxUnpool's scatter, which writes a host copy.
#include "onnx/op_families.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/base/error.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

Tensor index_tensor(const std::vector<int64_t>& idx, Device device) {
  return tensor(idx, {int64_t(idx.size())}).to(device);
}

// NonZero: the coordinates of the nonzero elements, [rank, count], in row-major
// order (a 0-dim input counts as one element of a 1-D one, as numpy does).
OpFn build_non_zero(const NodeContext&) {
  return [](const std::vector<Tensor>& in) {
    const Tensor x = in[0].dim() == 0 ? in[0].reshape({1}) : in[0];
    const Tensor mask = (x.dtype() == kBool ? x : ne(x, 0)).to(kCPU).contiguous();
    const bool* m = mask.data_ptr<bool>();
    const int64_t rank = x.dim(), n = mask.numel();
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < n; ++i)
      if (m[i]) hits.push_back(i);
    Tensor out = empty({rank, int64_t(hits.size())}, kInt64);
    int64_t* o = out.data_ptr<int64_t>();
    for (size_t h = 0; h < hits.size(); ++h) {
      int64_t rest = hits[h];
      for (int64_t d = rank - 1; d >= 0; --d) {
        o[d * int64_t(hits.size()) + int64_t(h)] = rest % x.size(d);
        rest /= x.size(d);
      }
    }
    return std::vector<Tensor>{out.to(x.device())};
  };
}

// Compress: the slices along `axis` (or the elements of the flattened input)
// whose condition is true; a condition shorter than the axis leaves the rest out.
OpFn build_compress(const NodeContext& ctx) {
  const bool has_axis = ctx.has("axis");
  const int64_t axis = ctx.get_int("axis", 0);
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor x = has_axis ? in[0] : in[0].reshape({in[0].numel()});
    const int64_t a = has_axis ? normalize_axis(site, axis, x.dim()) : 0;
    const Tensor& c = in[1];
    if (c.dim() != 1) throw ShapeError(site + ": the condition must be 1-D, got shape " + shape_str(c.shape()));
    if (c.size(0) > x.size(a))
      throw ShapeError(site + ": the condition has " + std::to_string(c.size(0)) + " values for an axis of " +
                       std::to_string(x.size(a)));
    const Tensor keep = (c.dtype() == kBool ? c : ne(c, 0)).to(kCPU).contiguous();
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < keep.numel(); ++i)
      if (keep.data_ptr<bool>()[i]) idx.push_back(i);
    return std::vector<Tensor>{index_select(x, a, index_tensor(idx, x.device()))};
  };
}

OpFn build_reverse_sequence(const NodeContext& ctx) {
  const int64_t batch_axis = ctx.get_int("batch_axis", 1), time_axis = ctx.get_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    ctx.invalid("batch_axis and time_axis must be 0 and 1, one each");
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (x.dim() < 2) throw ShapeError(site + ": the input must have at least 2 dims, got " + shape_str(x.shape()));
    const int64_t batches = x.size(batch_axis), steps = x.size(time_axis);
    const std::vector<int64_t> lens = int_values(in[1]);
    if (int64_t(lens.size()) != batches)
      throw ShapeError(site + ": sequence_lens has " + std::to_string(lens.size()) + " values for a batch of " +
                       std::to_string(batches));
    if (batches == 0) return std::vector<Tensor>{x};
    // Without the batch dim, the time axis is dim 0.
    std::vector<Tensor> parts;
    for (int64_t b = 0; b < batches; ++b) {
      const int64_t len = lens[size_t(b)];
      if (len < 0 || len > steps)
        throw ValueError(site + ": sequence length " + std::to_string(len) + " is outside [0, " +
                         std::to_string(steps) + "]");
      std::vector<int64_t> idx(static_cast<size_t>(steps));
      for (int64_t t = 0; t < steps; ++t) idx[size_t(t)] = t < len ? len - 1 - t : t;
      parts.push_back(index_select(x.select(batch_axis, b), 0, index_tensor(idx, x.device())));
    }
    return std::vector<Tensor>{stack(parts, batch_axis)};
  };
}

// MaxUnpool: zeros of the unpooled shape with x's values at `indices`, which
// count positions in the whole flattened unpooled tensor, as MaxPool's Indices
// output does; a larger output_shape keeps each position's coordinates.
OpFn build_max_unpool(const NodeContext& ctx) {
  const Shape kernel = ctx.get_ints("kernel_shape"), strides = ctx.get_ints("strides"), pads = ctx.get_ints("pads");
  if (kernel.empty()) ctx.invalid("attribute 'kernel_shape' is missing");
  const size_t n = kernel.size();
  if ((!strides.empty() && strides.size() != n) || (!pads.empty() && pads.size() != 2 * n))
    ctx.invalid("strides and pads do not match a " + std::to_string(n) + "-D kernel");
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    if (size_t(x.dim()) != n + 2)
      throw ShapeError(site + ": expected a " + std::to_string(n + 2) + "-D input, got " + shape_str(x.shape()));
    if (in[1].dtype() != kInt64) throw DTypeError(site + ": indices must be int64");
    if (in[1].shape() != x.shape())
      throw ShapeError(site + ": indices of shape " + shape_str(in[1].shape()) + " do not match the input's " +
                       shape_str(x.shape()));
    // The unpooled shape MaxPool's input had; the indices count positions in it.
    Shape inferred{x.size(0), x.size(1)};
    for (size_t i = 0; i < n; ++i) {
      const char* op = site.c_str();
      const int64_t s = strides.empty() ? 1 : strides[i];
      const int64_t pad = pads.empty() ? 0 : size_add(pads[i], pads[i + n], op);
      inferred.push_back(size_sub(size_add(size_mul(x.size(int64_t(i) + 2) - 1, s, op), kernel[i], op), pad, op));
    }
    for (int64_t s : inferred)
      if (s < 0) throw ShapeError(site + ": the output shape " + shape_str(inferred) + " has a negative size");
    // output_shape may ask for more: each position keeps its coordinates there.
    Shape shape = inferred;
    if (in.size() > 2 && in[2].defined()) {
      shape = int_values(in[2]);
      bool fits = shape.size() == n + 2;
      for (size_t d = 0; fits && d < shape.size(); ++d) fits = d < 2 ? shape[d] == inferred[d] : shape[d] >= inferred[d];
      if (!fits)
        throw ShapeError(site + ": output_shape " + shape_str(shape) + " is smaller than the unpooled shape " +
                         shape_str(inferred));
    }
    int64_t inferred_total = 1;
    for (int64_t s : inferred) inferred_total = size_mul(inferred_total, s, site.c_str());
    Tensor out = zeros(shape, x.dtype());
    const Tensor src = x.to(kCPU).contiguous(), idx = in[1].to(kCPU).contiguous();
    const size_t elem = src.element_size();
    auto* dst = static_cast<char*>(out.data_ptr());
    const auto* from = static_cast<const char*>(src.data_ptr());
    const int64_t* where = idx.data_ptr<int64_t>();
    for (int64_t i = 0; i < src.numel(); ++i) {
      if (where[i] < 0 || where[i] >= inferred_total)
        throw IndexError(site + ": index " + std::to_string(where[i]) + " is outside an unpooled tensor of " +
                         std::to_string(inferred_total) + " elements");
      int64_t rest = where[i], pos = 0, scale = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        pos += rest % inferred[d] * scale;
        rest /= inferred[d];
        scale *= shape[d];
      }
      std::memcpy(dst + pos * int64_t(elem), from + i * int64_t(elem), elem);
    }
    return std::vector<Tensor>{out.to(x.device())};
  };
}

// One box's corners, whichever diagonal or centre form the model gives.
struct Box {
  double y0, x0, y1, x1;
  double area() const { return (y1 - y0) * (x1 - x0); }
};

Box box_at(const double* b, bool center) {
  if (center) return {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// Intersection over union; boxes without area overlap nothing.
double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0), w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  if (h <= 0 || w <= 0 || a.area() <= 0 || b.area() <= 0) return 0;
  const double inter = h * w;
  return inter / (a.area() + b.area() - inter);
}

// NonMaxSuppression: for each batch entry and class, boxes by falling score
// (equal scores by index; NaN scores never) whose score passes score_threshold, each kept unless
// its IoU with a box kept before is above iou_threshold, at most
// max_output_boxes_per_class of them; rows [batch, class, box] in that order.
OpFn build_non_max_suppression(const NodeContext& ctx) {
  const int64_t box_format = ctx.get_int("center_point_box", 0);
  if (box_format != 0 && box_format != 1) ctx.invalid("center_point_box must be 0 or 1, got " + std::to_string(box_format));
  const bool center = box_format == 1;
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor& boxes = in[0];
    const Tensor& scores = in[1];
    if (boxes.dim() != 3 || boxes.size(2) != 4)
      throw ShapeError(site + ": boxes must be [batches, boxes, 4], got " + shape_str(boxes.shape()));
    if (scores.dim() != 3 || scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1))
      throw ShapeError(site + ": scores of shape " + shape_str(scores.shape()) + " do not match boxes of shape " +
                       shape_str(boxes.shape()));
    auto scalar = [&](size_t i, double fallback) {
      if (i >= in.size() || !in[i].defined() || in[i].numel() == 0) return fallback;
      if (in[i].numel() != 1) throw ShapeError(site + ": input " + std::to_string(i) + " must hold one value");
      return in[i].to(kCPU, kFloat64).reshape({}).item<double>();
    };
    const double limit = scalar(2, 0), iou_max = scalar(3, 0);
    if (!(iou_max >= 0 && iou_max <= 1))
      throw ValueError(site + ": iou_threshold must be in [0, 1], got " + std::to_string(iou_max));
    const bool has_score_min = in.size() > 4 && in[4].defined() && in[4].numel() > 0;
    const double score_min = scalar(4, 0);
    const int64_t batches = boxes.size(0), n = boxes.size(1), classes = scores.size(1);
    const Tensor bx = boxes.to(kCPU, kFloat64).contiguous(), sc = scores.to(kCPU, kFloat64).contiguous();
    std::vector<int64_t> rows;
    std::vector<int64_t> order;
    std::vector<Box> kept;
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t c = 0; c < classes; ++c) {
        const double* s = sc.data_ptr<double>() + (b * classes + c) * n;
        order.clear();
        // A NaN score is no score: never selected (and kept out of the sort,
        // whose order must be a strict weak one).
        for (int64_t i = 0; i < n; ++i)
          if (!std::isnan(s[i]) && (!has_score_min || s[i] > score_min)) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
        kept.clear();
        for (int64_t i : order) {
          if (double(kept.size()) >= limit) break;
          const Box box = box_at(bx.data_ptr<double>() + (b * n + i) * 4, center);
          bool keep = true;
          for (const Box& k : kept) keep = keep && !(iou(box, k) > iou_max);
          if (!keep) continue;
          kept.push_back(box);
          rows.insert(rows.end(), {b, c, i});
        }
      }
    Tensor out = tensor(rows, {int64_t(rows.size() / 3), 3});
    return std::vector<Tensor>{out.to(boxes.device())};
  };
}

// x's slices along dim 0 as rows of `width` numbers: floating types as float64,
// integers and bool as int64, so that equal values compare equal (-0 and 0 too).
// NaN sorts after every number and equals NaN, so the order is a strict weak
// one (which std::stable_sort needs) and NaNs count as one value.
inline int compare_values(double a, double b) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : a > b ? 1 : 0;
}
inline int compare_values(int64_t a, int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

template <class T>
int compare_rows(const T* a, const T* b, int64_t width) {
  for (int64_t k = 0; k < width; ++k)
    if (const int c = compare_values(a[k], b[k]); c != 0) return c;
  return 0;
}

// Unique: the distinct values (or slices along `axis`), sorted or in order of
// first appearance, with where each first appears, where each input element went
// and how many times each appears.
OpFn build_unique(const NodeContext& ctx) {
  const bool sorted = ctx.get_int("sorted", 1) != 0, has_axis = ctx.has("axis");
  const int64_t axis = ctx.get_int("axis", 0);
  const std::string site = ctx.where();
  return [=](const std::vector<Tensor>& in) {
    const Tensor x = has_axis ? in[0] : in[0].reshape({in[0].numel()});
    const int64_t a = normalize_axis(site, axis, x.dim());
    const int64_t n = x.size(a);
    const bool floating = is_floating(x.dtype());
    // Rows: the slices along the axis, moved to the front and flattened.
    std::vector<int64_t> front{a};
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != a) front.push_back(d);
    int64_t width = 1;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != a) width *= x.size(d);
    const Tensor rows = x.permute(front).to(kCPU, floating ? kFloat64 : kInt64).contiguous().reshape({n, width});
    auto cmp = [&](int64_t i, int64_t j) {
      return floating ? compare_rows(rows.data_ptr<double>() + i * width, rows.data_ptr<double>() + j * width, width)
                      : compare_rows(rows.data_ptr<int64_t>() + i * width, rows.data_ptr<int64_t>() + j * width, width);
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return cmp(i, j) < 0; });
    // Groups of equal rows in sorted order; each group's first member is its first appearance.
    std::vector<int64_t> first, counts, group_of(static_cast<size_t>(n));
    for (size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
        first.push_back(order[k]);
        counts.push_back(0);
      }
      ++counts.back();
      group_of[size_t(order[k])] = int64_t(first.size()) - 1;
    }
    // Output positions: sorted order, or groups by first appearance.
    std::vector<int64_t> position(first.size());
    for (size_t g = 0; g < first.size(); ++g) position[g] = int64_t(g);
    if (!sorted) {
      std::vector<int64_t> by_first(first.size());
      for (size_t g = 0; g < first.size(); ++g) by_first[g] = int64_t(g);
      std::sort(by_first.begin(), by_first.end(), [&](int64_t p, int64_t q) { return first[size_t(p)] < first[size_t(q)]; });
      for (size_t k = 0; k < by_first.size(); ++k) position[size_t(by_first[k])] = int64_t(k);
    }
    std::vector<int64_t> indices(first.size()), out_counts(first.size()), inverse(static_cast<size_t>(n));
    for (size_t g = 0; g < first.size(); ++g) {
      indices[size_t(position[g])] = first[g];
      out_counts[size_t(position[g])] = counts[g];
    }
    for (int64_t i = 0; i < n; ++i) inverse[size_t(i)] = position[size_t(group_of[size_t(i)])];
    const Device d = x.device();
    const Tensor y = index_select(x, a, index_tensor(indices, d));
    return std::vector<Tensor>{y, index_tensor(indices, d), index_tensor(inverse, d), index_tensor(out_counts, d)};
  };
}

}  // namespace

void add_select_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"NonZero", build_non_zero, 9}, {"Compress", build_compress, 9},
                           {"ReverseSequence", build_reverse_sequence, 10}, {"MaxUnpool", build_max_unpool, 9},
                           {"NonMaxSuppression", build_non_max_suppression, 10}, {"Unique", build_unique, 11}});
}

}  // namespace ember::onnx
