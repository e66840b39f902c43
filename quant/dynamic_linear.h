// DynamicQuantizedLinear: a Linear whose weights are stored as int8 and whose
// input is quantized to uint8 on every call from its own min and max ("dynamic":
// no calibration data needed). Float32 in, float32 out; inference only (no gradient).
//
// Its state is four buffers, saved and loaded like any module state:
//   weight             int8 [out, in]      symmetric codes, round(w / scale) in [-128, 127]
//   weight_scale       float32 [out] or [1] (per output channel, or per tensor)
//   weight_zero_point  int32, as weight_scale; always 0 (symmetric)
//   bias               float32 [out]        (absent without bias)
// The kernels' packed copy of the weights is derived from these and rebuilt
// whenever one of them changes (load_state_dict, to(device)).
#pragma once

#include "kernels/base/export.h"

#include <array>
#include <memory>
#include <mutex>

#include "nn/layers/linear.h"
#include "nn/module.h"
#include "quant/linear_int8.h"

EMBER_API_BEGIN

namespace ember::quant {

enum class QScheme { PerChannel, PerTensor };

class DynamicQuantizedLinear : public nn::Module {
 public:
  // An empty layer (zero weights, scales 1), to load a saved state into.
  DynamicQuantizedLinear(int64_t in_features, int64_t out_features, bool bias = true,
                         QScheme qscheme = QScheme::PerChannel);
  // Quantizes a float Linear's weights (symmetric int8, per output channel or per
  // tensor) on its device; the float layer is left as it was.
  static std::shared_ptr<DynamicQuantizedLinear> from_float(const nn::Linear& linear,
                                                            QScheme qscheme = QScheme::PerChannel);

  Tensor forward(const Tensor& x) override;
  // "in_features=784, out_features=1024, dtype=torch.qint8, qscheme=torch.per_channel_affine",
  // as PyTorch prints its dynamic quantized Linear.
  std::string extra_repr() const override;

  // The float weights the int8 ones stand for: scale * (weight - zero_point).
  Tensor dequantized_weight() const;
  // Checks the buffers (zero points 0, scales positive and finite) and rebuilds the
  // packed weights if any buffer changed since the last call. ValueError otherwise.
  // Safe to call from several threads at once: the first call packs, under a lock,
  // and the others wait for it and share the result. The packed weights stay valid
  // while the caller holds the pointer, even if a later call repacks.
  std::shared_ptr<const PackedLinearInt8> prepared();

  Tensor weight, weight_scale, weight_zero_point, bias;
  const int64_t in_features, out_features;
  const QScheme qscheme;
  // Activations in 7 bits, as PyTorch's dynamic Linear (see PackedLinearInt8).
  bool reduce_range = false;

 private:
  // Identifies the buffers' contents: storage, offset and in-place write counter.
  struct Stamp {
    const void* storage = nullptr;
    int64_t offset = 0;
    uint64_t version = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp stamp(const Tensor& t);
  std::array<Stamp, 4> stamps() const;

  std::mutex pack_mutex_;  // guards the three members below (forward may run on many threads)
  std::shared_ptr<const PackedLinearInt8> packed_;
  std::array<Stamp, 4> packed_stamps_{};
};

// Checks that scales and zero points are valid for a symmetric int8 layer; `name`
// prefixes the message. Shared by the layer and by load_quantized.
void check_weight_qparams(const std::string& name, const Tensor& scale, const Tensor& zero_point);

}  // namespace ember::quant

EMBER_API_END
