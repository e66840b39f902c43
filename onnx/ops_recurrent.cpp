// ONNX's recurrent layers: RNN, GRU and LSTM, forward, reverse or bidirectional,
// with per-batch sequence lengths, initial states, LSTM peepholes, the clip,
// GRU's linear_before_reset, both layouts, and the activation functions the spec
// lists. Composed of Ember's ops: the input's projection for every step is one
// matmul up front; each step then adds the state's projection (a matmul),
// applies the gates, and, where sequence_lens ends a sequence early, keeps that
// sequence's state and writes zeros to its output.
#include "onnx/op_families.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "kernels/base/error.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// One activation function of the `activations` attribute, with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor apply(const Activation& f, const Tensor& x) {
  const std::string& n = f.name;
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Tanh") return tanh(x);
  if (n == "Relu") return relu(x);
  if (n == "HardSigmoid") return clamp(add(mul(x, f.alpha), f.beta), 0.0, 1.0);
  if (n == "LeakyRelu") return where(ge(x, 0.0), x, mul(x, f.alpha));
  if (n == "ThresholdedRelu") return where(gt(x, f.alpha), x, 0.0);
  if (n == "ScaledTanh") return mul(tanh(mul(x, f.beta)), f.alpha);
  if (n == "Affine") return add(mul(x, f.alpha), f.beta);
  if (n == "Elu") return where(gt(x, 0.0), x, mul(sub(exp(x), 1.0), f.alpha));
  if (n == "Softsign") return div(x, add(abs(x), 1.0));
  return softplus(x);  // "Softplus": the names were checked at load
}

// The default alpha and beta of the activations that take them (the spec's).
void defaults(Activation& f, bool& takes_alpha, bool& takes_beta) {
  takes_alpha = takes_beta = false;
  if (f.name == "HardSigmoid") f.alpha = 0.2, f.beta = 0.5, takes_alpha = takes_beta = true;
  else if (f.name == "LeakyRelu") f.alpha = 0.01, takes_alpha = true;
  else if (f.name == "ThresholdedRelu" || f.name == "Elu") f.alpha = 1.0, takes_alpha = true;
  else if (f.name == "ScaledTanh" || f.name == "Affine") f.alpha = 1.0, f.beta = 0.0, takes_alpha = takes_beta = true;
}

struct RecurrentAttrs {
  Cell cell = Cell::Rnn;
  int64_t hidden = 0;
  int directions = 1;
  bool reverse_only = false;
  bool batch_first = false;  // layout 1
  double clip = 0;           // 0: none
  bool linear_before_reset = false;
  std::vector<Activation> f;  // per direction: RNN 1, GRU 2, LSTM 3
};

RecurrentAttrs recurrent_attrs(const NodeContext& ctx) {
  RecurrentAttrs a;
  a.cell = ctx.op_type == "RNN" ? Cell::Rnn : ctx.op_type == "GRU" ? Cell::Gru : Cell::Lstm;
  a.hidden = ctx.get_int("hidden_size", 0);
  if (a.hidden < 1 || a.hidden > (int64_t{1} << 40))  // so that 8 * hidden and its products stay in int64
    ctx.invalid("hidden_size must be between 1 and 2^40, got " + std::to_string(a.hidden));
  const std::string dir = ctx.get_string("direction", "forward");
  if (dir == "bidirectional") a.directions = 2;
  else if (dir == "reverse") a.reverse_only = true;
  else if (dir != "forward") ctx.invalid("direction must be forward, reverse or bidirectional, got '" + dir + "'");
  const int64_t layout = ctx.get_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.invalid("layout must be 0 or 1, got " + std::to_string(layout));
  a.batch_first = layout == 1;
  if (ctx.has("clip")) {
    a.clip = ctx.get_float("clip", 0);
    if (!(a.clip > 0)) ctx.invalid("clip must be positive");
  }
  a.linear_before_reset = ctx.get_int("linear_before_reset", 0) != 0;
  ctx.require_default("input_forget", 0);
  const size_t per_dir = a.cell == Cell::Rnn ? 1 : a.cell == Cell::Gru ? 2 : 3;
  std::vector<std::string> names;
  if (ctx.has("activations")) names = ctx.attrs.at("activations").strings;
  else
    for (int d = 0; d < a.directions; ++d) {
      if (a.cell == Cell::Rnn) names.insert(names.end(), {"Tanh"});
      else if (a.cell == Cell::Gru) names.insert(names.end(), {"Sigmoid", "Tanh"});
      else names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  if (names.size() != per_dir * size_t(a.directions))
    ctx.invalid("activations must name " + std::to_string(per_dir * size_t(a.directions)) + " functions, got " +
                std::to_string(names.size()));
  const std::vector<double> alphas = ctx.has("activation_alpha") ? ctx.get_floats("activation_alpha") : std::vector<double>{};
  const std::vector<double> betas = ctx.has("activation_beta") ? ctx.get_floats("activation_beta") : std::vector<double>{};
  size_t next_alpha = 0, next_beta = 0;
  static const char* known[] = {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu", "ThresholdedRelu",
                                "ScaledTanh", "Affine", "Elu", "Softsign", "Softplus"};
  for (const std::string& given : names) {
    // Matched without regard to case, as ONNX Runtime does ("sigmoid", "Sigmoid").
    const auto same = [&given](const char* k) {
      return std::equal(given.begin(), given.end(), k, k + std::strlen(k),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); });
    };
    const auto* match = std::find_if(std::begin(known), std::end(known), same);
    if (match == std::end(known)) ctx.unsupported("activation '" + given + "'");
    Activation f{*match};
    bool takes_alpha, takes_beta;
    defaults(f, takes_alpha, takes_beta);
    if (takes_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (takes_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    a.f.push_back(f);
  }
  return a;
}

Tensor clipped(const RecurrentAttrs& a, const Tensor& x) { return a.clip > 0 ? clamp(x, -a.clip, a.clip) : x; }

// One direction over the whole sequence. x: [seq, batch, input]; w: [G*h, input];
// r: [G*h, h]; b: [2*G*h] or undefined; p: LSTM peepholes [3*h] or undefined;
// h0, c0: [batch, h]; lens: sequence_lens as int64 [batch, 1] on x's device, or
// undefined when every sequence runs to the end. Returns Y [seq, batch, h] and
// sets h_last, c_last.
Tensor run_direction(const RecurrentAttrs& a, const std::vector<Activation>& f, const Tensor& x, const Tensor& w,
                     const Tensor& r, const Tensor& b, const Tensor& p, Tensor h, Tensor c, const Tensor& lens,
                     bool reverse, Tensor& h_last, Tensor& c_last) {
  const int64_t seq = x.size(0), hid = a.hidden;
  const int64_t gates = w.size(0) / hid;
  Tensor xw = matmul(x, w.t());  // [seq, batch, G*h]: every step's input projection at once
  Tensor wb, rb;
  if (b.defined()) {
    wb = b.narrow(0, 0, gates * hid);
    rb = b.narrow(0, gates * hid, gates * hid);
    xw = add(xw, wb);
  }
  const Tensor rt = r.t();
  const auto gate = [hid](const Tensor& t, int64_t k) { return t.narrow(-1, k * hid, hid); };
  Tensor ys = empty({seq, h.size(0), hid}, TensorOptions(h.dtype(), h.device()));
  for (int64_t step = 0; step < seq; ++step) {
    const int64_t t = reverse ? seq - 1 - step : step;
    const Tensor xt = xw.select(0, t);
    Tensor h_new, c_new;
    if (a.cell == Cell::Rnn) {
      Tensor pre = add(xt, matmul(h, rt));
      if (rb.defined()) pre = add(pre, rb);
      h_new = apply(f[0], clipped(a, pre));
    } else if (a.cell == Cell::Gru) {  // gates z, r, h
      // The state's projection for z and r, and for h too when the reset gate
      // scales it afterwards (linear_before_reset); otherwise h's comes below.
      const int64_t used = a.linear_before_reset ? 3 : 2;
      Tensor hr = matmul(h, rt.narrow(-1, 0, used * hid));
      if (rb.defined()) hr = add(hr, rb.narrow(0, 0, used * hid));
      const Tensor z = apply(f[0], clipped(a, add(gate(xt, 0), gate(hr, 0))));
      const Tensor rg = apply(f[0], clipped(a, add(gate(xt, 1), gate(hr, 1))));
      Tensor cand_pre;
      if (a.linear_before_reset) {
        cand_pre = add(gate(xt, 2), mul(rg, gate(hr, 2)));
      } else {
        Tensor rh = matmul(mul(rg, h), gate(rt, 2));
        if (rb.defined()) rh = add(rh, gate(rb, 2));
        cand_pre = add(gate(xt, 2), rh);
      }
      const Tensor cand = apply(f[1], clipped(a, cand_pre));
      h_new = add(mul(sub(1.0, z), cand), mul(z, h));
    } else {  // LSTM: gates i, o, f, c
      Tensor hr = matmul(h, rt);
      if (rb.defined()) hr = add(hr, rb);
      const Tensor pre = add(xt, hr);
      Tensor pi = gate(pre, 0), po = gate(pre, 1), pf = gate(pre, 2);
      if (p.defined()) {
        pi = add(pi, mul(p.narrow(0, 0, hid), c));
        pf = add(pf, mul(p.narrow(0, 2 * hid, hid), c));
      }
      const Tensor i = apply(f[0], clipped(a, pi)), fg = apply(f[0], clipped(a, pf));
      const Tensor cand = apply(f[1], clipped(a, gate(pre, 3)));
      c_new = add(mul(fg, c), mul(i, cand));
      if (p.defined()) po = add(po, mul(p.narrow(0, hid, hid), c_new));
      const Tensor o = apply(f[0], clipped(a, po));
      h_new = mul(o, apply(f[2], c_new));
    }
    if (lens.defined()) {  // ended sequences keep their state and output zeros
      const Tensor on = gt(lens, t);
      Tensor row = ys.select(0, t);
      row.copy_(where(on, h_new, 0.0));
      h = where(on, h_new, h);
      if (c_new.defined()) c = where(on, c_new, c);
    } else {
      Tensor row = ys.select(0, t);
      row.copy_(h_new);
      h = h_new;
      if (c_new.defined()) c = c_new;
    }
  }
  h_last = h;
  c_last = c;
  return ys;
}

OpFn build_recurrent(const NodeContext& ctx) {
  const RecurrentAttrs a = recurrent_attrs(ctx);
  const std::string site = ctx.where();
  const size_t outputs = ctx.num_outputs;
  return [a, site, outputs](const std::vector<Tensor>& given) {
    std::vector<Tensor> moved;
    const std::vector<Tensor>& in = on_one_device(given, moved);
    const auto input = [&in](size_t i) { return i < in.size() ? in[i] : Tensor(); };
    Tensor x = in[0];
    if (x.dim() != 3) throw ShapeError(site + ": X must have 3 dims, got " + std::to_string(x.dim()));
    if (a.batch_first) x = x.transpose(0, 1);
    const int64_t seq = x.size(0), batch = x.size(1), hid = a.hidden, dirs = a.directions;
    const int64_t gates = a.cell == Cell::Rnn ? 1 : a.cell == Cell::Gru ? 3 : 4;
    const Tensor &w = in[1], &r = in[2];
    const Tensor b = input(3), lens = input(4), h0 = input(5), c0 = input(6), p = input(7);
    const auto expect = [&](const Tensor& t, const Shape& s, const char* name) {
      if (t.defined() && t.shape() != s)
        throw ShapeError(site + ": " + name + " must have shape " + shape_str(s) + ", got " + shape_str(t.shape()));
    };
    expect(w, {dirs, gates * hid, x.size(2)}, "W");
    expect(r, {dirs, gates * hid, hid}, "R");
    expect(b, {dirs, 2 * gates * hid}, "B");
    expect(lens, {batch}, "sequence_lens");
    const Shape state = a.batch_first ? Shape{batch, dirs, hid} : Shape{dirs, batch, hid};
    expect(h0, state, "initial_h");
    expect(c0, state, "initial_c");
    expect(p, {dirs, 3 * hid}, "P");
    // With nothing to compute, no step runs at all (X may be [2^62, 0, 4]): Y is
    // empty and the last states are the initial ones, as for a sequence_lens of 0.
    // Otherwise the input's projection and Y, both as long as the sequence, are
    // allocated before the first step, so a sequence too long to hold is refused
    // at once; the time the steps take is bounded only by the sequence's length.
    if (seq == 0 || batch == 0) {
      const TensorOptions o(x.dtype(), x.device());
      const auto initial = [&](const Tensor& s) { return s.defined() ? s.to(x.dtype()).contiguous() : zeros(state, o); };
      std::vector<Tensor> out{zeros(a.batch_first ? Shape{batch, seq, dirs, hid} : Shape{seq, dirs, batch, hid}, o),
                              initial(h0)};
      if (a.cell == Cell::Lstm) out.push_back(initial(c0));
      out.resize(std::min(out.size(), outputs));
      return out;
    }
    Tensor lens_column;
    if (lens.defined()) {
      const std::vector<int64_t> l = int_values(lens);
      for (int64_t v : l)
        if (v < 0 || v > seq)
          throw ValueError(site + ": sequence_lens has " + std::to_string(v) + ", outside 0 to " + std::to_string(seq));
      lens_column = lens.to(x.device(), kInt64).reshape({batch, 1});
    }
    const auto state_of = [&](const Tensor& s, int64_t d) {
      if (!s.defined()) return zeros({batch, hid}, TensorOptions(x.dtype(), x.device()));
      return (a.batch_first ? s.select(1, d) : s.select(0, d)).to(x.dtype());
    };
    const size_t per_dir = a.f.size() / size_t(dirs);
    std::vector<Tensor> ys, hs, cs;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::vector<Activation> f(a.f.begin() + long(size_t(d) * per_dir), a.f.begin() + long(size_t(d + 1) * per_dir));
      Tensor h_last, c_last;
      ys.push_back(run_direction(a, f, x, w.select(0, d), r.select(0, d), b.defined() ? b.select(0, d) : Tensor(),
                                 p.defined() ? p.select(0, d) : Tensor(), state_of(h0, d), state_of(c0, d), lens_column,
                                 a.reverse_only || d == 1, h_last, c_last));
      hs.push_back(h_last);
      cs.push_back(c_last);
    }
    Tensor y = stack(ys, 1);  // [seq, dirs, batch, h]
    Tensor yh = stack(hs, 0), yc = stack(cs, 0);  // [dirs, batch, h]
    if (a.batch_first) {
      y = y.permute({2, 0, 1, 3});  // [batch, seq, dirs, h]
      yh = yh.transpose(0, 1);
      yc = yc.transpose(0, 1);
    }
    std::vector<Tensor> out{y.contiguous(), yh.contiguous()};
    if (a.cell == Cell::Lstm) out.push_back(yc.contiguous());
    out.resize(std::min(out.size(), outputs));
    return out;
  };
}

}  // namespace

void add_recurrent_ops(std::vector<OpRow>& rows) {
  rows.insert(rows.end(), {{"RNN", build_recurrent, 7}, {"GRU", build_recurrent, 7}, {"LSTM", build_recurrent, 7}});
}

}  // namespace ember::onnx
