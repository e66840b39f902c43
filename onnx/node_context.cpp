// Attribute access with ONNX's defaults, and the error messages every op uses.
#include "onnx/node_context.h"

#include "kernels/base/error.h"

namespace ember::onnx {

namespace {
const Attribute* find(const NodeContext& ctx, const std::string& name, Attribute::Kind kind, const char* kind_name) {
  auto it = ctx.attrs.find(name);
  if (it == ctx.attrs.end()) return nullptr;
  if (it->second.kind != kind) ctx.invalid("attribute '" + name + "' must be " + kind_name);
  return &it->second;
}
}  // namespace

int64_t NodeContext::get_int(const std::string& attr, int64_t fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::Int, "an int");
  return a ? a->i : fallback;
}

double NodeContext::get_float(const std::string& attr, double fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::Float, "a float");
  return a ? a->f : fallback;
}

std::string NodeContext::get_string(const std::string& attr, const std::string& fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::String, "a string");
  return a ? a->s : fallback;
}

std::vector<int64_t> NodeContext::get_ints(const std::string& attr, const std::vector<int64_t>& fallback) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::Ints, "a list of ints");
  return a ? a->ints : fallback;
}

std::vector<double> NodeContext::get_floats(const std::string& attr) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::Floats, "a list of floats");
  return a ? a->floats : std::vector<double>{};
}

Tensor NodeContext::get_tensor(const std::string& attr) const {
  const Attribute* a = find(*this, attr, Attribute::Kind::Tensor, "a tensor");
  return a ? a->t : Tensor();
}

std::string NodeContext::where() const {
  return "ONNX op '" + op_type + "' (node '" + name + "', opset " + std::to_string(opset) + ")";
}

void NodeContext::unsupported(const std::string& what) const {
  throw NotImplementedError(where() + ": " + what + " is not supported");
}

void NodeContext::invalid(const std::string& what) const { throw FormatError(where() + ": " + what); }

void NodeContext::require_default(const std::string& attr, int64_t default_value) const {
  int64_t v = get_int(attr, default_value);
  if (v != default_value) unsupported("attribute " + attr + "=" + std::to_string(v));
}

void NodeContext::require_absent(const std::string& attr) const {
  if (has(attr)) unsupported("attribute " + attr);
}

std::vector<int64_t> int_values(const Tensor& t) {
  if (t.dtype() != kInt64 && t.dtype() != kInt32)
    throw DTypeError("expected an int64 tensor of values but got " + std::string(dtype_name(t.dtype())));
  if (t.dim() > 1) throw ShapeError("expected a 1-D tensor of values but got " + std::to_string(t.dim()) + " dims");
  return t.to(kInt64).to_vector<int64_t>();
}

Tensor flatten_at(const Tensor& x, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? outer : inner) *= x.size(d);
  return x.reshape({outer, inner});
}

const std::vector<Tensor>& on_one_device(const std::vector<Tensor>& inputs, std::vector<Tensor>& moved) {
  const Tensor* off_host = nullptr;
  for (const Tensor& t : inputs)
    if (t.defined() && !t.device().is_cpu()) {
      off_host = &t;
      break;
    }
  if (!off_host) return inputs;
  moved.reserve(inputs.size());
  for (const Tensor& t : inputs)
    moved.push_back(t.defined() && t.device().is_cpu() ? t.to(off_host->device()) : t);
  return moved;
}

int64_t normalize_axis(const std::string& where, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError(where + ": axis " + std::to_string(axis) + " is out of range for a rank-" + std::to_string(rank) +
                     " input");
  return a;
}

}  // namespace ember::onnx
