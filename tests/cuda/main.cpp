// Catch2's main for the cuda suite: on a machine without a usable CUDA device (or
// in a build without the CUDA backend) every program of the suite exits with 77,
// which Meson reports as SKIP rather than FAIL.
#define CATCH_CONFIG_RUNNER
#include <cstdio>

#include <catch2/catch.hpp>

#include "tensor/cuda.h"

int main(int argc, char* argv[]) {
  if (!ember::cuda::is_available()) {
    std::puts("skipped: no CUDA device (ember::cuda::is_available() is false)");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
