// Front-ends of softmax and log_softmax: the input is made contiguous and viewed
// as (outer, dim, inner) for the kernel.
#include "kernels/cpu/softmax.h"
#include "tensor/autocast.h"
#include "tensor/checks.h"
#include "tensor/cuda_kernels.h"
#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember {
namespace {

Tensor softmax_impl(const char* name, const Tensor& a, int64_t dim, bool log) {
  if (auto r = autocast::run(autocast::Policy::fp32,
                             [&](const Tensor& x) { return softmax_impl(name, x, dim, log); }, a))
    return *r;
  const int64_t d = wrap_dim(dim, a.dim());
  if (!is_floating(a.dtype()))
    throw DTypeError(msg(name, "(): expected a floating point tensor but got dtype ", a.dtype()));
  Tensor out = empty(a.shape(), {a.dtype(), a.device()});
  if (const OpBackend backend = backend_of(name, a); backend != Backend::None && a.numel() != 0) {
    NoGradGuard no_grad;
    Tensor x = a.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= a.shape()[i];
    for (int64_t i = d + 1; i < a.dim(); ++i) inner *= a.shape()[i];
    const int64_t size = a.dim() == 0 ? 1 : a.shape()[d];
    if (backend == Backend::CPU) cpu::softmax(a.dtype(), outer, size, inner, x.data_ptr(), out.data_ptr(), log);
    else EMBER_CUDA(cuda::softmax(a.dtype(), outer, size, inner, x.data_ptr(), out.data_ptr(), log, stream_of(a)));
  }
  if (needs_grad({&a})) {
    auto node = record(log ? OpId::LogSoftmax : OpId::Softmax, {&a}, {&out});
    node->save("y", out);
    node->attrs = DimAttrs{a.dim() == 0 ? 0 : d};
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t dim) { return softmax_impl("softmax", a, dim, false); }
Tensor log_softmax(const Tensor& a, int64_t dim) { return softmax_impl("log_softmax", a, dim, true); }
Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return ember::log_softmax(*this, dim); }

}  // namespace ember
