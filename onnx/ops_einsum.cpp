// ONNX Einsum: numpy.einsum's equations ("bij,bjk->bik", "...ii->...i",
// implicit outputs), any number of operands, with ellipsis broadcasting.
//
// Every label becomes a small integer (letters 0-51, ellipsis dims 52 on, aligned
// from the right across operands). Each operand first gets its repeated labels
// reduced to a diagonal and its labels that nothing else needs summed out; then
// the operands are combined left to right, two at a time, as one batched matmul:
// shared labels still needed later are batch dims, shared labels needed nowhere
// else are contracted, the rest are the matmul's rows and columns. The last
// result is permuted into the output's order. So a contraction costs one matmul,
// never the outer product of every label.
#include "onnx/op_families.h"

#include <algorithm>
#include <map>
#include <string>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

constexpr int kEllipsis = 52;  // the first ellipsis label

// One operand's labels as the equation writes them: letters, and -1 where "..." stands.
struct Term {
  std::vector<int> labels;
  bool has_ellipsis = false;
};

int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -2;
}

Term parse_term(const std::string& site, const std::string& text) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || t.has_ellipsis)
        throw FormatError(site + ": the equation's '.' must come as one '...' per term");
      t.has_ellipsis = true;
      t.labels.push_back(-1);
      i += 2;
      continue;
    }
    const int l = letter_label(c);
    if (l < 0) throw FormatError(site + ": the equation has '" + std::string(1, c) + "', which is not a letter");
    t.labels.push_back(l);
  }
  return t;
}

// The equation, parsed once at load.
struct Equation {
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

Equation parse_equation(const std::string& site, const std::string& eq) {
  Equation e;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(parse_term(site, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = parse_term(site, eq.substr(arrow + 2));
  }
  return e;
}

// An operand on its way through: its tensor and the label of each of its dims.
struct Operand {
  Tensor t;
  std::vector<int> labels;
};

// How many dims "..." stands for in a term over an input of rank `rank`.
int64_t ellipsis_dims(const std::string& site, const Term& term, int64_t rank) {
  const int64_t letters = static_cast<int64_t>(term.labels.size()) - (term.has_ellipsis ? 1 : 0);
  const int64_t own = rank - letters;
  if (own < 0 || (!term.has_ellipsis && own != 0))
    throw ShapeError(site + ": a term names " + std::to_string(letters) + " dims but its input has " +
                     std::to_string(rank));
  return own;
}

// `x` with labels `labels`, after its dims at positions p < q (same label) are
// replaced by their diagonal at p.
Operand diagonal(const std::string& site, const Operand& x, size_t p, size_t q) {
  const int64_t n = x.t.size(static_cast<int64_t>(p));
  if (x.t.size(static_cast<int64_t>(q)) != n)
    throw ShapeError(site + ": a label repeated in one term has sizes " + std::to_string(n) + " and " +
                     std::to_string(x.t.size(static_cast<int64_t>(q))));
  // Move p and q last, flatten them, and take every (n + 1)-th element: exact, no masks.
  Shape order;
  for (size_t d = 0; d < x.labels.size(); ++d)
    if (d != p && d != q) order.push_back(static_cast<int64_t>(d));
  order.push_back(static_cast<int64_t>(p));
  order.push_back(static_cast<int64_t>(q));
  Tensor moved = x.t.permute(order).contiguous();
  Shape flat_shape(moved.shape().begin(), moved.shape().end() - 2);
  flat_shape.push_back(n * n);
  Tensor pick = arange(0, n * n, n + 1, TensorOptions(kInt64, x.t.device()));
  Operand out;
  out.t = take(moved.reshape(flat_shape), static_cast<int64_t>(flat_shape.size()) - 1, pick);
  for (int64_t d : order)
    if (d != static_cast<int64_t>(q)) out.labels.push_back(x.labels[size_t(d)]);
  return out;
}

// Sums `x` over each of its labels for which `needed` is false.
Operand sum_unneeded(const Operand& x, const std::vector<bool>& needed) {
  Shape dims;
  Operand out;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (needed[size_t(x.labels[d])]) out.labels.push_back(x.labels[d]);
    else dims.push_back(static_cast<int64_t>(d));
  }
  out.t = dims.empty() ? x.t : sum(x.t, dims).to(x.t.dtype());  // sum widens integers to int64
  return out;
}

int64_t label_size(const Operand& x, int label) {
  for (size_t d = 0; d < x.labels.size(); ++d)
    if (x.labels[d] == label) return x.t.size(static_cast<int64_t>(d));
  return 1;
}

// x with the dim of `label` expanded to `size` (from 1).
Operand widen(const Operand& x, int label, int64_t size) {
  Operand out = x;
  Shape shape = x.t.shape();
  for (size_t d = 0; d < x.labels.size(); ++d)
    if (x.labels[d] == label) shape[d] = size;
  out.t = x.t.expand(shape);
  return out;
}

// x permuted to [batch..., first..., second...] with first and second each
// flattened into one dim: a matmul operand.
Tensor arrange(const Operand& x, const std::vector<int>& batch, const std::vector<int>& first,
               const std::vector<int>& second) {
  Shape order, shape;
  const auto dim_of = [&x](int l) { return std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin(); };
  int64_t rows = 1, cols = 1;
  for (int l : batch) {
    order.push_back(dim_of(l));
    shape.push_back(x.t.size(dim_of(l)));
  }
  for (int l : first) {
    order.push_back(dim_of(l));
    rows *= x.t.size(dim_of(l));
  }
  for (int l : second) {
    order.push_back(dim_of(l));
    cols *= x.t.size(dim_of(l));
  }
  shape.push_back(rows);
  shape.push_back(cols);
  return x.t.permute(order).contiguous().reshape(shape);
}

// a and b as one batched matmul: batch labels (shared and needed later),
// contracted labels (shared, needed nowhere else), a's own and b's own labels.
// Batch dims of size 1 on one side broadcast in the matmul.
Operand contract(const std::string& site, Operand a, Operand b, const std::vector<bool>& needed) {
  std::vector<int> batch, contracted, left, right;
  const auto in = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  for (int l : a.labels) {
    if (in(b.labels, l)) (needed[size_t(l)] ? batch : contracted).push_back(l);
    else left.push_back(l);
  }
  for (int l : b.labels)
    if (!in(a.labels, l)) right.push_back(l);
  for (int l : contracted) {  // an ellipsis dim of size 1 on one side meets n on the other
    const int64_t sa = label_size(a, l), sb = label_size(b, l);
    if (sa == sb) continue;
    if (sa != 1 && sb != 1)
      throw ShapeError(site + ": a label has sizes " + std::to_string(sa) + " and " + std::to_string(sb));
    if (sa == 1) a = widen(a, l, sb);
    else b = widen(b, l, sa);
  }
  Tensor product = matmul(arrange(a, batch, left, contracted), arrange(b, batch, contracted, right));
  Operand out;
  Shape shape(product.shape().begin(), product.shape().end() - 2);  // the batch dims, broadcast
  out.labels = batch;
  for (int l : left) {
    shape.push_back(label_size(a, l));
    out.labels.push_back(l);
  }
  for (int l : right) {
    shape.push_back(label_size(b, l));
    out.labels.push_back(l);
  }
  out.t = product.reshape(shape);
  return out;
}

Tensor einsum(const std::string& site, const Equation& eq, const std::vector<Tensor>& inputs) {
  if (inputs.size() != eq.inputs.size())
    throw ShapeError(site + ": the equation has " + std::to_string(eq.inputs.size()) + " terms for " +
                     std::to_string(inputs.size()) + " inputs");
  // Labels per operand, ellipsis dims numbered from the right.
  int64_t widest = 0;
  std::vector<int64_t> own(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    own[i] = ellipsis_dims(site, eq.inputs[i], inputs[i].dim());
    widest = std::max(widest, own[i]);
  }
  std::vector<Operand> ops(inputs.size());
  std::vector<int> count(static_cast<size_t>(kEllipsis + widest), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ops[i].t = inputs[i];
    for (int l : eq.inputs[i].labels) {
      if (l >= 0) {
        ops[i].labels.push_back(l);
        continue;
      }
      for (int64_t j = 0; j < own[i]; ++j) ops[i].labels.push_back(kEllipsis + static_cast<int>(widest - own[i] + j));
    }
    for (int l : ops[i].labels) ++count[size_t(l)];
  }
  // The output's labels: as written, or (implicit) the ellipsis then every letter
  // used once, in ASCII order (upper case first), as numpy does.
  std::vector<int> out_labels;
  if (eq.explicit_output) {
    for (int l : eq.output.labels) {
      if (l < 0) {
        for (int64_t j = 0; j < widest; ++j) out_labels.push_back(kEllipsis + static_cast<int>(j));
        continue;
      }
      if (size_t(l) >= count.size() || count[size_t(l)] == 0)
        throw FormatError(site + ": the output names a label no input has");
      if (std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end())
        throw FormatError(site + ": the output repeats a label");
      out_labels.push_back(l);
    }
  } else {
    for (int64_t j = 0; j < widest; ++j) out_labels.push_back(kEllipsis + static_cast<int>(j));
    for (int l = 26; l < 52; ++l)
      if (count[size_t(l)] == 1) out_labels.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (count[size_t(l)] == 1) out_labels.push_back(l);
  }
  // Letter labels must agree in size across operands; ellipsis dims broadcast.
  std::map<int, int64_t> size_of;
  for (const Operand& o : ops)
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d];
      const int64_t s = o.t.size(static_cast<int64_t>(d));
      auto [it, fresh] = size_of.emplace(l, s);
      if (fresh || it->second == s) continue;
      if (l >= kEllipsis && (s == 1 || it->second == 1)) {
        it->second = std::max(it->second, s);
        continue;
      }
      throw ShapeError(site + ": a label has sizes " + std::to_string(it->second) + " and " + std::to_string(s));
    }
  // Diagonals of labels repeated within an operand.
  for (Operand& o : ops)
    for (bool again = true; again;) {
      again = false;
      for (size_t p = 0; p < o.labels.size() && !again; ++p)
        for (size_t q = p + 1; q < o.labels.size() && !again; ++q)
          if (o.labels[p] == o.labels[q]) {
            o = diagonal(site, o, p, q);
            again = true;
          }
    }
  // Combine left to right; before each step, sum out what nothing later needs.
  // `later[l]` counts label l's uses by operands not yet combined, so finding what
  // is needed after each step costs one pass over the labels, not over the rest.
  std::vector<int> later(count.size(), 0);
  for (const Operand& o : ops)
    for (int l : o.labels) ++later[size_t(l)];
  std::vector<bool> in_output(count.size(), false);
  for (int l : out_labels) in_output[size_t(l)] = true;
  size_t consumed = 0;  // operands whose labels are no longer in `later`
  const auto needed_after = [&](size_t i) {  // labels used by the output or by operands after i
    for (; consumed <= i; ++consumed)
      for (int l : ops[consumed].labels) --later[size_t(l)];
    std::vector<bool> needed(count.size(), false);
    for (size_t l = 0; l < needed.size(); ++l) needed[l] = in_output[l] || later[l] > 0;
    return needed;
  };
  Operand acc = ops.size() > 1 ? ops[0] : sum_unneeded(ops[0], needed_after(0));
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<bool> needed = needed_after(i);
    // Labels of one side only that nothing later needs are summed first.
    std::vector<bool> keep_a = needed, keep_b = needed;
    for (int l : ops[i].labels) keep_a[size_t(l)] = true;
    for (int l : acc.labels) keep_b[size_t(l)] = true;
    Operand a = sum_unneeded(acc, keep_a), b = sum_unneeded(ops[i], keep_b);
    acc = contract(site, a, b, needed);
  }
  // Into the output's order; an ellipsis dim no operand had broadcasts to 1.
  Shape order;
  for (int l : out_labels) {
    const auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    if (it == acc.labels.end()) {
      acc.t = acc.t.unsqueeze(acc.t.dim());
      acc.labels.push_back(l);
      order.push_back(acc.t.dim() - 1);
    } else {
      order.push_back(it - acc.labels.begin());
    }
  }
  return acc.t.permute(order).contiguous();
}

OpFn build_einsum(const NodeContext& ctx) {
  if (!ctx.has("equation")) ctx.invalid("attribute 'equation' is missing");
  const std::string site = ctx.where();
  const Equation eq = parse_equation(site, ctx.get_string("equation", ""));
  return [site, eq](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    return std::vector<Tensor>{einsum(site, eq, in)};
  };
}

}  // namespace

void add_einsum_ops(std::vector<OpRow>& rows) { rows.insert(rows.end(), {{"Einsum", build_einsum, 12}}); }

}  // namespace ember::onnx
