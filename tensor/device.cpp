// Device parsing and printing.
#include "tensor/device.h"

#include <cctype>

#include "kernels/base/error.h"

namespace ember {

Device::Device(DeviceType type, int index) : type_(type), index_(has_index() ? index : -1) {
  if (has_index() && index < -1)
    throw ValueError("device index must be -1 or non-negative, got " + std::to_string(index));
}

Device::Device(const std::string& spec) : type_(DeviceType::CPU), index_(-1) {
  auto bad = [&] {
    return ValueError("invalid device string: '" + spec + "' (expected cpu, cuda, cuda:N, meta, emu or emu:N)");
  };
  if (spec == "cpu") return;
  if (spec == "meta") { type_ = DeviceType::Meta; return; }
  size_t n = 0;  // length of the type's name
  if (spec.rfind("cuda", 0) == 0) { type_ = DeviceType::CUDA; n = 4; }
  else if (spec.rfind("emu", 0) == 0) { type_ = DeviceType::Emu; n = 3; }
  else throw bad();
  if (spec.size() == n) return;
  if (spec[n] != ':' || spec.size() == n + 1 || spec.size() > n + 5) throw bad();
  int idx = 0;
  for (size_t i = n + 1; i < spec.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(spec[i]))) throw bad();
    idx = idx * 10 + (spec[i] - '0');
  }
  index_ = idx;
}

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::Meta: return "meta";
    case DeviceType::Emu: return "emu";
  }
  return "?";
}

std::string Device::str() const {
  std::string s = device_type_name(type_);
  if (index_ >= 0) {
    s += ':';
    s += std::to_string(index_);
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
