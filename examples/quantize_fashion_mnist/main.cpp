// quantize_fashion_mnist: takes a model trained by train_fashion_mnist (the seed CNN
// or the MLP, named in the file's metadata), quantizes its Linear layers to int8 with
// quant::quantize_dynamic, and reports float32 against int8: test accuracy, model
// file size, and inference latency at batch 1 and batch 1000. Then it saves the
// quantized model, reloads it into a freshly quantized model of the same
// architecture, and checks that the predictions are identical. docs/quant.md shows a run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "ember.h"
#include "models.h"
#include "nn/data/fashion_mnist.h"
#include "nn/serialize/safetensors.h"
#include "quant/quant.h"

namespace {

using namespace ember;
using Clock = std::chrono::steady_clock;

struct Eval {
  double accuracy = 0;
  Tensor logits;  // [10000, 10]
};

Eval evaluate(nn::Module& model, const data::FashionMNIST& test) {
  NoGradGuard no_grad;
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < test.size(); start += 1000)
    parts.push_back(model(test.images().narrow(0, start, std::min<int64_t>(1000, test.size() - start))));
  Eval e;
  e.logits = cat(parts, 0);
  e.accuracy = (e.logits.argmax(1) == test.labels()).sum().item<double>() / double(test.size());
  return e;
}

// Median seconds of `calls` forward calls on x, after a few warm-up calls.
double median_latency(nn::Module& model, const Tensor& x, int calls) {
  NoGradGuard no_grad;
  for (int i = 0; i < std::max(3, calls / 10); ++i) Tensor y = model(x);
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    const auto t0 = Clock::now();
    Tensor y = model(x);
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Quantize a trained FashionMNIST model to int8 and compare it with float32"};
  std::string model_file, out_dir = "quantized", data_dir = data::FashionMNIST::kDefaultRoot, qscheme = "per_channel";
  int threads = 2, calls1 = 500, calls1000 = 20;
  app.add_option("model_file", model_file, "a model.safetensors written by train_fashion_mnist")->required();
  app.add_option("--out", out_dir, "folder for the float32 and int8 model files");
  app.add_option("--data", data_dir, "folder with the FashionMNIST IDX files");
  app.add_option("--qscheme", qscheme, "per_channel or per_tensor weight scales")
      ->check(CLI::IsMember({"per_channel", "per_tensor"}));
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  app.add_option("--calls", calls1, "timed calls at batch 1 (a twentieth of them, at least 5, at batch 1000)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  calls1000 = std::max(5, calls1 / 25);

  try {
    set_num_threads(threads);
    const auto meta = serialize::read_safetensors_metadata(model_file);
    const std::string arch = meta.count("model") ? meta.at("model") : "network";
    const data::FashionMNIST test(data_dir, false);
    std::filesystem::create_directories(out_dir);

    auto model = train::make_model(arch);
    model->load_state_dict(serialize::load_safetensors(model_file));
    model->eval();
    const std::string float_path = out_dir + "/" + arch + "-float32.safetensors";
    const std::string int8_path = out_dir + "/" + arch + "-int8.safetensors";
    serialize::save_safetensors(model->state_dict(), float_path, {{"model", arch}});
    const Tensor x1 = test.images().narrow(0, 0, 1).contiguous();
    const Tensor x1000 = test.images().narrow(0, 0, 1000).contiguous();

    std::printf("model %s from %s, %d threads, int8 kernel %s\n", arch.c_str(), model_file.c_str(), threads,
                int8_gemm_kernel().c_str());
    const Eval f = evaluate(*model, test);
    const double f_lat1 = median_latency(*model, x1, calls1), f_lat1000 = median_latency(*model, x1000, calls1000);

    quant::quantize_dynamic(model, {"Linear"}, kInt8,
                            qscheme == "per_tensor" ? quant::QScheme::PerTensor : quant::QScheme::PerChannel);
    std::printf("%s\n", model->str().c_str());
    const Eval q = evaluate(*model, test);
    const double q_lat1 = median_latency(*model, x1, calls1), q_lat1000 = median_latency(*model, x1000, calls1000);
    quant::save_quantized(*model, int8_path);

    // A fresh model of the same architecture, quantized, then loaded from the file.
    auto reloaded = train::make_model(arch);
    quant::quantize_dynamic(reloaded, {"Linear"}, kInt8,
                            qscheme == "per_tensor" ? quant::QScheme::PerTensor : quant::QScheme::PerChannel);
    reloaded->eval();
    quant::load_quantized(*reloaded, int8_path);
    const Eval r = evaluate(*reloaded, test);
    const bool same_predictions = (r.logits.argmax(1) != q.logits.argmax(1)).sum().item<int64_t>() == 0;
    const bool same_logits = (r.logits - q.logits).abs().max().item<float>() == 0.0f;

    const double fsize = double(std::filesystem::file_size(float_path)) / 1024.0;
    const double qsize = double(std::filesystem::file_size(int8_path)) / 1024.0;
    std::printf("\n%-8s %10s %12s %16s %18s\n", "", "accuracy", "file (KiB)", "batch 1 (us)", "batch 1000 (ms)");
    std::printf("%-8s %9.2f%% %12.1f %16.1f %18.2f\n", "float32", 100 * f.accuracy, fsize, f_lat1 * 1e6,
                f_lat1000 * 1e3);
    std::printf("%-8s %9.2f%% %12.1f %16.1f %18.2f\n", "int8", 100 * q.accuracy, qsize, q_lat1 * 1e6, q_lat1000 * 1e3);
    std::printf("accuracy change %+.2f points, file %.2fx smaller, batch 1 %.2fx and batch 1000 %.2fx faster\n",
                100 * (q.accuracy - f.accuracy), fsize / qsize, f_lat1 / q_lat1, f_lat1000 / q_lat1000);
    std::printf("saved %s and %s; reloaded int8 model: %s predictions, %s logits\n", float_path.c_str(),
                int8_path.c_str(), same_predictions ? "identical" : "DIFFERENT", same_logits ? "identical" : "different");
    return same_predictions ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "quantize_fashion_mnist: %s\n", e.what());
    return 2;
  }
}
