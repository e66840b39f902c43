// quantize_dynamic (see quantize_dynamic.h).
#include "quant/quantize_dynamic.h"

#include "tensor/checks.h"

namespace ember::quant {
namespace {

// Module::replace_module is protected so that user code does not rewire models by
// accident; quantization is its sanctioned caller. C++ lets a derived class name a
// protected member through a pointer to member, which can then be applied to any
// Module: this class exists only to form that pointer and is never instantiated.
struct ModuleSurgery : nn::Module {
  static constexpr auto replace = &ModuleSurgery::replace_module;
};

void swap_children(nn::Module& parent, QScheme qscheme) {
  for (auto& [name, child] : parent.named_children()) {
    if (auto linear = std::dynamic_pointer_cast<nn::Linear>(child)) {
      auto q = DynamicQuantizedLinear::from_float(*linear, qscheme);
      q->train(linear->is_training());
      (parent.*ModuleSurgery::replace)(name, q);
    } else {
      swap_children(*child, qscheme);
    }
  }
}

}  // namespace

std::shared_ptr<nn::Module> quantize_dynamic(std::shared_ptr<nn::Module> model, const std::set<std::string>& types,
                                             DType dtype, QScheme qscheme) {
  if (!model) throw ValueError("quantize_dynamic: the model is null");
  if (dtype != kInt8) throw DTypeError(msg("quantize_dynamic: only dtype int8 is supported, got ", dtype));
  for (const std::string& t : types)
    if (t != "Linear")
      throw ValueError(msg("quantize_dynamic: Ember can quantize Linear layers only, got '", t, "'"));
  if (types.empty()) return model;
  if (auto linear = std::dynamic_pointer_cast<nn::Linear>(model)) return DynamicQuantizedLinear::from_float(*linear, qscheme);
  swap_children(*model, qscheme);
  return model;
}

}  // namespace ember::quant
