// save_quantized / load_quantized (see serialize.h). Every problem is collected
// first, in the style of Module::load_state_dict, so one error lists them all; the
// values are copied only after that, through Module::load_state_dict.
#include "quant/serialize.h"

#include <map>
#include <set>

#include "nn/serialize/safetensors.h"
#include "quant/dynamic_linear.h"
#include "tensor/checks.h"

namespace ember::quant {

void save_quantized(const nn::Module& model, const std::string& path) {
  serialize::save_safetensors(model.state_dict(), path, {{"ember.quantization", "dynamic-int8"}});
}

void load_quantized_state_dict(nn::Module& model, const nn::StateDict& state) {
  std::map<std::string, Tensor> given;
  for (const auto& [n, t] : state) given[n] = t;
  std::vector<std::string> missing, unexpected, problems;
  std::set<std::string> own_names;
  for (const auto& [n, t] : model.state_dict()) {
    own_names.insert(n);
    auto it = given.find(n);
    if (it == given.end()) {
      missing.push_back(n);
      continue;
    }
    const Tensor& g = it->second;
    if (g.shape() != t.shape())
      problems.push_back(msg("size mismatch for ", n, ": copying a param with shape ", shape_str(g.shape()),
                             " from checkpoint, the shape in current model is ", shape_str(t.shape()), "."));
    if (g.dtype() != t.dtype())
      problems.push_back(msg("dtype mismatch for ", n, ": copying a param with dtype ", g.dtype(),
                             " from checkpoint, the dtype in current model is ", t.dtype(), "."));
  }
  for (const auto& [n, t] : state)
    if (!own_names.count(n)) unexpected.push_back(n);
  // Scales and zero points of each quantized layer, when present and well typed.
  if (problems.empty())
    for (auto& [prefix, m] : model.named_modules()) {
      if (!std::dynamic_pointer_cast<DynamicQuantizedLinear>(m)) continue;
      const std::string p = prefix.empty() ? "" : prefix + ".";
      auto s = given.find(p + "weight_scale"), z = given.find(p + "weight_zero_point");
      if (s == given.end() || z == given.end()) continue;
      try {
        check_weight_qparams(p + "weight", s->second, z->second);
      } catch (const ValueError& e) {
        problems.push_back(e.what());
      }
    }
  auto quoted = [](const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", \"" : "\"") + names[i] + "\"";
    return s;
  };
  std::string errors;
  if (!missing.empty()) errors += "\n\tMissing key(s) in state_dict: " + quoted(missing) + ". ";
  if (!unexpected.empty()) errors += "\n\tUnexpected key(s) in state_dict: " + quoted(unexpected) + ". ";
  for (const auto& p : problems) errors += "\n\t" + p;
  if (!errors.empty()) throw ValueError("Error(s) in loading quantized state_dict for " + model.type_name() + ":" + errors);
  model.load_state_dict(state, true);
}

void load_quantized(nn::Module& model, const std::string& path) {
  load_quantized_state_dict(model, serialize::load_safetensors(path));
}

}  // namespace ember::quant
