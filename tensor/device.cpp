// Device parsing and printing.
#include "tensor/device.h"

#include <cctype>

#include "kernels/base/error.h"

namespace ember {

Device::Device(DeviceType type, int index) : type_(type), index_(type == DeviceType::CUDA ? index : -1) {
  if (type == DeviceType::CUDA && index < -1)
    throw ValueError("device index must be -1 or non-negative, got " + std::to_string(index));
}

Device::Device(const std::string& spec) : type_(DeviceType::CPU), index_(-1) {
  auto bad = [&] {
    return ValueError("invalid device string: '" + spec + "' (expected cpu, cuda, cuda:N or meta)");
  };
  if (spec == "cpu") return;
  if (spec == "meta") { type_ = DeviceType::Meta; return; }
  if (spec.rfind("cuda", 0) != 0) throw bad();
  type_ = DeviceType::CUDA;
  if (spec.size() == 4) return;
  if (spec[4] != ':' || spec.size() == 5 || spec.size() > 9) throw bad();
  int idx = 0;
  for (size_t i = 5; i < spec.size(); ++i) {
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
  }
  return "?";
}

std::string Device::str() const {
  std::string s = device_type_name(type_);
  if (index_ >= 0) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
