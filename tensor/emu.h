// `emu`: an accelerator emulated in host memory. Its tensors have memory of their own
// (counted per device), its kernels are the CPU's, and every front-end treats it as a
// separate device with numbered devices and a current one, exactly as it treats CUDA:
// copies to and from it go through copy_between_devices, C++ numbers reach its kernels
// by value, and ops leave the current device as they found it. It exists so that the
// code between devices, which CUDA shares, runs in tests on machines without a GPU;
// the counters let a test see what crossed, and when the current device changed.
#pragma once

#include "kernels/base/export.h"

#include <cstddef>
#include <cstdint>

EMBER_API_BEGIN

namespace ember::emu {

inline constexpr int kDeviceCount = 2;  // emu:0 and emu:1

int device_count();
// The calling thread's current emu device (0 until set_device), as CUDA's is per thread.
int current_device();
// Raises DeviceError "emu: invalid device ordinal N (2 devices)" outside [0, 2).
void set_device(int device);

// What crossed between the host and emu memory, and how often the current device
// changed, on the calling thread since the last reset_counters().
struct Counters {
  int64_t host_to_device = 0;   // copies (transfers) from the CPU
  int64_t device_to_host = 0;   // copies to the CPU
  int64_t device_to_device = 0; // copies between emu:0 and emu:1
  int64_t non_blocking = 0;     // host-to-device copies asked to be non-blocking
  int64_t bytes = 0;            // bytes moved by all of them
  int64_t device_switches = 0;  // changes of the current device (set_device and guards)
};
Counters counters();
void reset_counters();

// Bytes held now by tensors on emu:`device`, from every thread (the allocator's book).
size_t memory_allocated(int device);

enum class Transfer { HostToDevice, DeviceToHost, DeviceToDevice };
// Moves nbytes between host and emu memory (both are host memory) and counts it.
void transfer(void* dst, const void* src, size_t nbytes, Transfer kind, bool non_blocking);

}  // namespace ember::emu

EMBER_API_END
