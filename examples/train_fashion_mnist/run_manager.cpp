// One run (see run_manager.h). Evaluation runs under NoGradGuard in batches of
// 1000 so memory stays bounded on any device.
#include "run_manager.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/nn.h"
#include "nn/serialize/safetensors.h"
#include "nn/serialize/summary_writer.h"
#include "models.h"
#include "progress.h"

namespace train {
namespace {

using namespace ember;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double test_accuracy(nn::Module& net, const data::FashionMNIST& test_set, const Device& device) {
  NoGradGuard no_grad;
  net.eval();
  const int64_t n = test_set.size();
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += 1000) {
    const int64_t len = std::min<int64_t>(1000, n - start);
    Tensor x = test_set.images().narrow(0, start, len).to(device);
    Tensor y = test_set.labels().narrow(0, start, len).to(device);
    correct += (net(x).argmax(1) == y).sum().item<int64_t>();
  }
  net.train();
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace

std::vector<EpochResult> train_run(const RunConfig& config, const TrainOptions& options,
                                   const data::FashionMNIST& train_set, const data::FashionMNIST& test_set) {
  const Device device(config.device);
  manual_seed(options.seed);
  auto net = make_model(config.model);
  net->to(device);
  std::unique_ptr<nn::optim::Optimizer> opt;
  if (config.optimizer == "sgd")
    opt = std::make_unique<nn::optim::SGD>(net->parameters(), config.lr, nn::optim::SGDOptions{.momentum = 0.9});
  else
    opt = std::make_unique<nn::optim::Adam>(net->parameters(), config.lr);

  Tensor images = train_set.images(), labels = train_set.labels();
  if (options.train_limit > 0 && options.train_limit < images.shape()[0]) {
    images = images.narrow(0, 0, options.train_limit).contiguous();
    labels = labels.narrow(0, 0, options.train_limit).contiguous();
  }
  data::DataLoader loader(images, labels,
                          {.batch_size = config.batch_size, .shuffle = true, .seed = options.seed,
                           .num_workers = config.num_workers});
  const std::string run_dir = options.out_dir + "/run-" + std::to_string(config.run);
  std::filesystem::create_directories(run_dir);
  serialize::SummaryWriter writer(run_dir + "/tensorboard");

  std::vector<EpochResult> results;
  const auto run_start = Clock::now();
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    char label[64];
    std::snprintf(label, sizeof label, "run %d epoch %d/%d", config.run, epoch, options.epochs);
    ProgressBar bar(label, loader.size(), options.progress);
    double loss_sum = 0;
    int64_t batches = 0;
    for (auto& batch : loader.epoch(epoch - 1)) {
      Tensor x = batch.inputs.to(device), y = batch.targets.to(device);
      Tensor loss = nn::functional::cross_entropy((*net)(x), y);
      opt->zero_grad();
      loss.backward();
      opt->step();
      const double l = loss.item<double>();
      loss_sum += l;
      ++batches;
      bar.update(l, x.shape()[0]);
    }
    bar.finish();
    EpochResult r;
    r.run = config.run;
    r.epoch = epoch;
    r.loss = batches ? loss_sum / static_cast<double>(batches) : 0;
    r.epoch_duration = seconds_since(epoch_start);
    r.accuracy = test_accuracy(*net, test_set, device);
    r.run_duration = seconds_since(run_start);
    r.config = config;
    writer.add_scalar("loss", r.loss, epoch);
    writer.add_scalar("accuracy", r.accuracy, epoch);
    results.push_back(r);
  }
  writer.close();
  serialize::save_safetensors(net->state_dict(), run_dir + "/model.safetensors",
                              {{"network", config.model == "mlp" ? "MLP 784-1024-1024-10" : "seed FashionMNIST CNN"},
                               {"model", config.model},
                               {"epochs", std::to_string(options.epochs)}});
  return results;
}

}  // namespace train
