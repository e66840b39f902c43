// Where a tensor's memory lives: the CPU, a CUDA device, `meta` (shape and dtype
// only, no memory: for shape inference and for testing device checks without a GPU),
// or `emu` (an accelerator emulated in host memory, so that the code paths between
// devices run in tests on machines without a GPU: tensor/emu.h).
// Printed as PyTorch prints devices: cpu, cuda:0, meta, emu:1.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <ostream>
#include <string>

EMBER_API_BEGIN

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA, Meta, Emu };
inline constexpr int kNumDeviceTypes = 4;

class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int index = -1);
  // Parses "cpu", "cuda", "cuda:N", "meta", "emu" and "emu:N"; raises ValueError otherwise.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  DeviceType type() const { return type_; }
  // -1 means "no index" (cpu, meta) or "the current device" (a bare "cuda" or "emu").
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_meta() const { return type_ == DeviceType::Meta; }
  bool is_emu() const { return type_ == DeviceType::Emu; }
  // Whether the type numbers its devices (cuda:N, emu:N) and has a current one.
  bool has_index() const { return type_ == DeviceType::CUDA || type_ == DeviceType::Emu; }
  std::string str() const;

  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int index_;
};

const char* device_type_name(DeviceType t);  // "cpu", "cuda", "meta", "emu"
std::ostream& operator<<(std::ostream& os, const Device& d);

inline const Device kCPU{DeviceType::CPU};
inline const Device kMeta{DeviceType::Meta};

}  // namespace ember

EMBER_API_END
