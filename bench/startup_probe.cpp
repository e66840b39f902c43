// ember-startup-probe: what an embedding application does first, as one process:
// start, load libember.so (it links the shared library, as a consumer does), load
// the seed network's weights from safetensors and run one batch-1 inference. The
// startup suite (suite_startup.cpp) times whole runs of it from the outside.
// Usage: ember-startup-probe <seed_net.safetensors>   (full start-up)
//        ember-startup-probe --load-only               (returns at main: library loading alone)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "ember.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (std::strcmp(argv[1], "--load-only") == 0) return 0;
  using namespace ember;
  try {
    NoGradGuard no_grad;
    auto net = std::make_shared<nn::Network>();
    net->load_state_dict(serialize::load_safetensors(argv[1]));
    net->eval();
    const Tensor logits = net->forward(zeros({1, 1, 28, 28}));
    // A use of the result, so the inference cannot be skipped, and a sanity check.
    return logits.shape() == Shape{1, 10} && std::isfinite(logits.sum().item<float>()) ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
