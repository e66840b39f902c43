// Mixed precision on CUDA: autocast's CUDA region (float16 by default, float32 for
// softmax and sums, CPU tensors left alone) and the GradScaler on CUDA gradients,
// held to the CPU's scale trajectory and to the same bits of the fused unscale
// (the shared checks in tests/nn/amp_scaler_checks.h).
#include "nn/amp_scaler_checks.h"

using namespace ember;
using nn::amp::AutocastGuard;

TEST_CASE("CUDA: autocast dtypes, fused unscale and scale trajectory match the CPU", "[cuda][amp]") {
  const Device dev("cuda:0");
  {
    AutocastGuard autocast(DeviceType::CUDA);  // float16 by default on CUDA
    Tensor a = rand({8, 8}).to(dev);
    CHECK(matmul(a, a).dtype() == kFloat16);
    CHECK(matmul(a, a).softmax(1).dtype() == kFloat32);
    CHECK(matmul(a, a).sum().dtype() == kFloat32);
    CHECK(matmul(a.cpu(), a.cpu()).dtype() == kFloat32);  // a CUDA region leaves CPU tensors alone
  }
  CHECK(amp_checks::trajectory(dev) == amp_checks::kWantedScales);
  amp_checks::check_many_gradients(dev);
}
