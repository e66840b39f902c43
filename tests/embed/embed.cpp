// A C++ program built outside the Ember tree against the installed headers and
// library, found through pkg-config alone: what an embedder does. It uses the
// tensor, nn, data, serialization and quantization headers through <ember.h>:
// loads the seed network's weights, runs it batch by batch through a DataLoader,
// quantizes it to int8, saves and reloads the int8 model.
// Usage: app <seed_net.safetensors> <scratch folder>
#include <ember.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

using namespace ember;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

float max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<float>(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <seed_net.safetensors> <scratch folder>\n", argv[0]);
    return 2;
  }
  try {
    Tensor a = tensor({{1, 2}, {3, 4}});
    check(matmul(a, a).sum().item<float>() == 54.0f, "[[1,2],[3,4]]^2 sums to 54");

    NoGradGuard no_grad;
    auto net = std::make_shared<nn::Network>();
    net->load_state_dict(serialize::load_safetensors(argv[1]));
    net->eval();
    Generator gen(7);
    const Tensor images = rand({64, 1, 28, 28}, {}, &gen);
    const Tensor logits = net->forward(images);
    check(logits.shape() == Shape{64, 10}, "logits are [64, 10]");

    // The same images in batches of 16 through a DataLoader give the same logits.
    data::DataLoader loader(images, zeros({64}, kInt64), {.batch_size = 16});
    int64_t row = 0;
    for (data::Batch& batch : loader.epoch(0)) {
      check(max_abs_diff(net->forward(batch.inputs), logits.narrow(0, row, 16)) < 1e-5f,
            "a DataLoader batch gives the whole batch's logits");
      row += 16;
    }
    check(row == 64, "the DataLoader visits all 64 images");

    // int8: close to float32 (docs/quant.md), and identical after save and reload.
    auto quantized = quant::quantize_dynamic(net);
    const Tensor q_logits = quantized->forward(images);
    const float scale = logits.abs().max().item<float>();
    check(max_abs_diff(q_logits, logits) < 0.05f * scale, "int8 logits within 5% of float32's range");
    const std::string path = std::string(argv[2]) + "/seed_int8.safetensors";
    quant::save_quantized(*quantized, path);
    auto reloaded = quant::quantize_dynamic(std::make_shared<nn::Network>());
    quant::load_quantized(*reloaded, path);
    reloaded->eval();
    check(max_abs_diff(reloaded->forward(images), q_logits) == 0.0f, "reloaded int8 model gives the same logits");

    std::printf("embedded Ember %s: seed network float32 and int8, %d failure(s)\n", EMBER_VERSION, failures);
  } catch (const Error& e) {
    std::fprintf(stderr, "ember error: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
