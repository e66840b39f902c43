// Tensor creation: empty/zeros/ones/full/arange/rand/randn, from values, from_blob.
#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "tensor/backend.h"
#include "tensor/checks.h"
#include "tensor/cuda.h"
#include "tensor/cuda_kernels.h"
#include "tensor/ops.h"

namespace ember {
namespace {

void check_shape(const char* op, const Shape& shape) {
  for (int64_t s : shape)
    if (s < 0) throw ValueError(msg(op, ": negative dimension ", s, " in shape ", shape_str(shape)));
  if (shape.size() > static_cast<size_t>(kMaxDims))
    throw ValueError(msg(op, ": at most ", kMaxDims, " dimensions are supported, got ", shape.size()));
}

// A bare "cuda" or "emu" means the current device; without a CUDA backend no CUDA device exists.
Device resolve(Device d) {
  if (d.is_cuda() && !get_allocator(DeviceType::CUDA))
    throw DeviceError("CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
  return resolve_device(d);
}

[[noreturn]] void throw_too_large(const Shape& shape, DType dtype) {
  throw OutOfMemoryError(msg("tensor of shape ", shape_str(shape), " and dtype ", dtype,
                             " is too large to allocate (its size in bytes overflows 64 bits)"));
}

// empty_strided's body, taking the shape and strides by value so that empty() can
// move its freshly computed strides in: one heap allocation fewer per tensor, which
// a batch-1 forward makes a few dozen of.
Tensor make_empty(Shape shape, Shape strides, TensorOptions options) {
  const Device dev = resolve(options.device);
  // Bytes needed, with every product checked: a hostile shape must raise, not wrap.
  int64_t extent = checked_numel(shape) == 0 ? 0 : 1, nbytes = 0;
  for (size_t d = 0; extent && d < shape.size(); ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(shape[d] - 1, strides[d], &span) || __builtin_add_overflow(extent, span, &extent))
      throw_too_large(shape, options.dtype);
  }
  if (__builtin_mul_overflow(extent, static_cast<int64_t>(dtype_size(options.dtype)), &nbytes))
    throw_too_large(shape, options.dtype);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), dev);
  impl->sizes = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = options.dtype;
  impl->device = dev;
  return Tensor(std::move(impl));
}

}  // namespace

Tensor empty_strided(const Shape& shape, const Shape& strides, TensorOptions options) {
  check_shape("empty_strided", shape);
  return make_empty(shape, strides, options);
}

Tensor empty(const Shape& shape, TensorOptions options) {
  check_shape("empty", shape);
  return make_empty(shape, contiguous_strides(shape), options);
}

Tensor full(const Shape& shape, Scalar value, TensorOptions options) {
  Tensor t = empty(shape, options);
  t.fill_(value);
  return t;
}

Tensor full(const Shape& shape, Scalar value, std::nullopt_t) {
  return full(shape, value, TensorOptions(value.is_floating() ? kDefaultFloat : value.dtype()));
}

Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1, options); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), {t.dtype(), t.device()}); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), {t.dtype(), t.device()}); }
Tensor full_like(const Tensor& t, Scalar value) { return full(t.shape(), value, {t.dtype(), t.device()}); }

Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor arange(Scalar start, Scalar end, Scalar step) {
  const bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  return arange(start, end, step, TensorOptions(all_int ? kInt64 : kDefaultFloat));
}

// Values are computed as start + i*step in double (then cast), like PyTorch, so a
// float32 arange does not accumulate rounding error along its length.
Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0) throw ValueError("arange: step must be nonzero");
  if (!std::isfinite(s) || !std::isfinite(e)) throw ValueError("arange: unsupported range: " + start.str() + " -> " + end.str());
  if ((st > 0 && e < s) || (st < 0 && e > s))
    throw ValueError("arange: upper bound and larger bound inconsistent with step sign");
  const int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  Tensor host = empty({n}, TensorOptions(kFloat64));
  double* p = host.data_ptr<double>();
  const bool ints = is_integral(options.dtype, true);
  for (int64_t i = 0; i < n; ++i)
    p[i] = ints ? static_cast<double>(start.to_int() + i * step.to_int()) : s + static_cast<double>(i) * st;
  return host.to(options.device, options.dtype);
}

namespace {
Tensor random_fill(const char* op, const Shape& shape, TensorOptions options, Generator* gen, bool normal) {
  if (!is_floating(options.dtype))
    throw DTypeError(msg(op, ": expected a floating point dtype but got ", options.dtype));
  // Generated where the tensor lives; both devices give the same numbers for the
  // same (seed, offset), since each element is a pure function of its counter.
  Tensor out = empty(shape, options);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t words = normal ? 2 : static_cast<uint64_t>(cpu::random_words_per_element(options.dtype));
  const uint64_t offset = g.reserve(words * static_cast<uint64_t>(out.numel()));
  switch (const OpBackend backend = backend_of(op, out); backend) {
    case Backend::CPU:
      if (normal) cpu::fill_normal(options.dtype, out.data_ptr(), out.numel(), g.seed(), offset, 0.0, 1.0);
      else cpu::fill_uniform(options.dtype, out.data_ptr(), out.numel(), g.seed(), offset, 0.0, 1.0);
      break;
    case Backend::CUDA:
      EMBER_CUDA(normal ? cuda::fill_normal(options.dtype, out.data_ptr(), out.numel(), g.seed(), offset, 0.0, 1.0,
                                            stream_of(out))
                        : cuda::fill_uniform(options.dtype, out.data_ptr(), out.numel(), g.seed(), offset, 0.0,
                                             1.0, stream_of(out)));
      break;
    case Backend::None: break;
  }
  return out;
}
}  // namespace

Tensor rand(const Shape& shape, TensorOptions options, Generator* gen) {
  return random_fill("rand", shape, options, gen, false);
}
Tensor randn(const Shape& shape, TensorOptions options, Generator* gen) {
  return random_fill("randn", shape, options, gen, true);
}

Tensor tensor(std::initializer_list<float> values, TensorOptions options) {
  return tensor(std::vector<float>(values), {}, options);
}

Tensor tensor(std::initializer_list<std::initializer_list<float>> rows, TensorOptions options) {
  std::vector<float> flat;
  const int64_t cols = rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != cols)
      throw ShapeError(msg("tensor: expected every row to have ", cols, " values, got ", r.size()));
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return tensor(flat, {static_cast<int64_t>(rows.size()), cols}, options);
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, const Shape& strides,
                 std::function<void(void*)> deleter, Device device) {
  check_shape("from_blob", shape);
  device = resolve(device);  // a bare "cuda" is the current GPU, as for every other factory
  // No memory as large as a shape whose byte count overflows can exist, so such a
  // shape (from a hostile file or a C caller) is an argument error, checked before
  // any product is used.
  const auto too_large = [&] {
    return ValueError(msg("from_blob: shape ", shape_str(shape), " and dtype ", dtype,
                          " span more bytes than fit in 64 bits"));
  };
  const int64_t count = checked_numel(shape);
  if (!data && count != 0) throw ValueError("from_blob: data is null but the shape has elements");
  Shape st = strides.empty() ? contiguous_strides(shape) : strides;
  if (st.size() != shape.size())
    throw ValueError(msg("from_blob: ", shape.size(), " sizes but ", st.size(), " strides"));
  int64_t extent = count == 0 ? 0 : 1, nbytes = 0;
  if (extent)
    for (size_t d = 0; d < shape.size(); ++d) {
      if (st[d] < 0) throw ValueError("from_blob: negative strides are not supported");
      int64_t span = 0;
      if (__builtin_mul_overflow(shape[d] - 1, st[d], &span) || __builtin_add_overflow(extent, span, &extent))
        throw too_large();
    }
  if (__builtin_mul_overflow(extent, static_cast<int64_t>(dtype_size(dtype)), &nbytes)) throw too_large();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, static_cast<size_t>(nbytes), device,
                                            std::move(deleter));
  impl->sizes = shape;
  impl->strides = st;
  impl->dtype = dtype;
  impl->device = device;
  return Tensor(std::move(impl));
}

Tensor scalar_tensor(Scalar value, Device device) {
  Tensor t = full({}, value, TensorOptions(value.dtype(), device));
  t.impl().wrapped_number = true;
  return t;
}

}  // namespace ember
