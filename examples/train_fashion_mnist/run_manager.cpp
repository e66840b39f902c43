// One run (see run_manager.h). Evaluation runs under NoGradGuard in batches of
// 1000 so memory stays bounded on any device.
#include "run_manager.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "dist/dist.h"
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

// The predicted class of every test image, with the inputs in `dtype`.
Tensor predictions(nn::Module& net, const data::FashionMNIST& test_set, const Device& device,
                   DType dtype = kFloat32) {
  NoGradGuard no_grad;
  net.eval();
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < test_set.size(); start += 1000) {
    const int64_t len = std::min<int64_t>(1000, test_set.size() - start);
    parts.push_back(net(test_set.images().narrow(0, start, len).to(device, dtype)).argmax(1).cpu());
  }
  net.train();
  return cat(parts);
}

double test_accuracy(nn::Module& net, const data::FashionMNIST& test_set, const Device& device) {
  return (predictions(net, test_set, device) == test_set.labels()).to(kFloat64).mean().item<double>();
}

// --half: the trained model converted to float16 (parameters and inputs), its test
// accuracy and how often it predicts what float32 predicts; the model is restored after.
void report_half_inference(nn::Module& net, const data::FashionMNIST& test_set, const Device& device) {
  const nn::StateDict saved = net.state_dict();
  std::vector<Tensor> copies;
  for (const auto& [_, t] : saved) copies.push_back(t.clone());
  const Tensor want = predictions(net, test_set, device);
  net.half();
  const Tensor got = predictions(net, test_set, device, kFloat16);
  net.float32();
  nn::StateDict restore;
  for (size_t i = 0; i < saved.size(); ++i) restore.emplace_back(saved[i].first, copies[i]);
  net.load_state_dict(restore);
  const auto acc = [&](const Tensor& p) { return (p == test_set.labels()).to(kFloat64).mean().item<double>(); };
  std::printf("float16 inference: test accuracy %.4f (float32 %.4f), same prediction on %.2f%% of the test set\n",
              acc(got), acc(want), 100.0 * (got == want).to(kFloat64).mean().item<double>());
}

}  // namespace

std::vector<EpochResult> train_run(const RunConfig& config, const TrainOptions& options,
                                   const data::FashionMNIST& train_set, const data::FashionMNIST& test_set) {
  const Device device(config.device);
  manual_seed(options.seed);
  auto net = make_model(config.model);
  net->to(device);
  std::shared_ptr<nn::Module> model = net;
  int rank = 0, world = 1;
#if EMBER_HAVE_MPI
  if (options.ddp) {
    rank = dist::get_rank();
    world = dist::get_world_size();
    model = std::make_shared<dist::DistributedDataParallel>(net);  // rank 0's initial values everywhere
  }
#endif
  if (config.batch_size % world != 0)
    throw ValueError("--batch-size must be a multiple of the number of ranks with --ddp");
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
                          {.batch_size = config.batch_size / world, .shuffle = options.shuffle, .seed = options.seed,
                           .num_workers = config.num_workers, .num_replicas = world, .rank = rank});
  const std::string run_dir = options.out_dir + "/run-" + std::to_string(config.run);
  std::optional<serialize::SummaryWriter> writer;  // rank 0 alone writes files
  if (rank == 0) {
    std::filesystem::create_directories(run_dir);
    writer.emplace(run_dir + "/tensorboard");
  }

  // Disabled (a pass-through) without --amp.
  nn::amp::GradScaler scaler(nn::amp::GradScalerOptions{.enabled = !options.amp.empty()});

  int64_t skipped_steps = 0;

  std::vector<EpochResult> results;
  const auto run_start = Clock::now();
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto epoch_start = Clock::now();
    char label[64];
    std::snprintf(label, sizeof label, "run %d epoch %d/%d", config.run, epoch, options.epochs);
    ProgressBar bar(label, loader.size(), options.progress && rank == 0);
    double loss_sum = 0;
    int64_t batches = 0;
    for (auto& batch : loader.epoch(epoch - 1)) {
      Tensor x = batch.inputs.to(device), y = batch.targets.to(device);
      Tensor loss;
      {
        std::optional<nn::amp::AutocastGuard> autocast;  // --amp: forward and loss in mixed precision
        if (!options.amp.empty()) autocast.emplace(device.type(), options.amp == "fp16" ? kFloat16 : kBFloat16);
        loss = nn::functional::cross_entropy((*model)(x), y);
      }
      opt->zero_grad();
      scaler.scale(loss).backward();
      skipped_steps += !scaler.step(*opt);  // skipped when a gradient overflowed (fp16)
      scaler.update();
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
#if EMBER_HAVE_MPI
    if (options.ddp) {  // the mean over the ranks' shards
      Tensor l = full({1}, r.loss, {kFloat64});
      dist::all_reduce(l, dist::ReduceOp::Avg);
      r.loss = l.item<double>();
    }
#endif
    r.epoch_duration = seconds_since(epoch_start);
    r.accuracy = rank == 0 ? test_accuracy(*net, test_set, device) : 0;
    r.run_duration = seconds_since(run_start);
    r.config = config;
    if (writer) {
      writer->add_scalar("loss", r.loss, epoch);
      writer->add_scalar("accuracy", r.accuracy, epoch);
    }
    results.push_back(r);
  }
  if (!options.amp.empty() && rank == 0)
    std::printf("amp %s: %lld steps skipped for inf/NaN gradients, final loss scale %g\n", options.amp.c_str(),
                static_cast<long long>(skipped_steps), scaler.get_scale());
  if (options.half && rank == 0) report_half_inference(*net, test_set, device);
  if (rank != 0) return results;
  writer->close();
  serialize::save_safetensors(net->state_dict(), run_dir + "/model.safetensors",
                              {{"network", config.model == "mlp" ? "MLP 784-1024-1024-10" : "seed FashionMNIST CNN"},
                               {"model", config.model},
                               {"epochs", std::to_string(options.epochs)}});
  return results;
}

}  // namespace train
