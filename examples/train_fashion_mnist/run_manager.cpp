// One run (see run_manager.h). Evaluation runs under NoGradGuard in batches of
// 1000 so memory stays bounded on any device. A checkpoint is taken after a step
// and holds everything the rest of the run depends on, so a resumed run ends with
// the same bytes as one that never stopped (docs/checkpoints.md).
#include "run_manager.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "dist/dist.h"
#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/nn.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/safetensors.h"
#include "nn/serialize/summary_writer.h"
#include "models.h"
#include "progress.h"
#include "results.h"

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

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

namespace {

std::string record(const std::string& path, const std::map<std::string, std::string>& extra, const char* key) {
  const auto it = extra.find(key);
  if (it == extra.end())
    throw ValueError(path + ": not a checkpoint of train_fashion_mnist (it has no '" + key + "' record)");
  return it->second;
}

int64_t record_integer(const std::string& path, const std::map<std::string, std::string>& extra, const char* key) {
  const std::string s = record(path, extra, key);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw ValueError(path + ": the checkpoint's '" + key + "' record is not an integer");
  return v;
}

double record_double(const std::string& path, const std::map<std::string, std::string>& extra, const char* key) {
  try {
    return nlohmann::json::parse(record(path, extra, key)).get<double>();
  } catch (const nlohmann::json::exception&) {
    throw ValueError(path + ": the checkpoint's '" + key + "' record is not a number");
  }
}

}  // namespace

CheckpointInfo read_checkpoint(const std::string& path, const TrainOptions& options) {
  const serialize::TrainingState info = serialize::read_checkpoint_info(path);
  const std::string saved = record(path, info.extra, "config");
  if (saved != options.config_key)
    throw ValueError(path + ": the checkpoint was written by a run with other settings (" + saved +
                     "); this one has " + options.config_key);
  CheckpointInfo c;
  c.run = static_cast<int>(record_integer(path, info.extra, "run"));
  c.run_done = record_integer(path, info.extra, "run_done") == 1;
  c.table = results_from_json(record(path, info.extra, "results"));
  return c;
}

void train_run(const RunConfig& config, const TrainOptions& options, const data::FashionMNIST& train_set,
               const data::FashionMNIST& test_set, std::vector<EpochResult>& table, const std::string& resume_from) {
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

  // Loss scaling for float16 only (a pass-through otherwise): bfloat16 has float32's
  // exponent range, so its gradients need none (docs/amp.md), as in PyTorch's CPU recipe.
  nn::amp::GradScaler scaler(nn::amp::GradScalerOptions{.enabled = options.amp == "fp16"});

  // What a checkpoint holds besides the objects: this epoch's loss sum on every rank
  // (they differ; rank 0 writes them all), the skipped steps, the time spent so far.
  int64_t skipped_steps = 0;
  double loss_sum = 0, epoch_seconds_before = 0, run_seconds_before = 0;
  serialize::TrainingState state{.model = net.get(), .optimizer = opt.get(), .scaler = &scaler, .loader = &loader,
                                 .generators = {{"default", &default_generator()}}};
  if (!resume_from.empty()) {
    serialize::load_checkpoint(resume_from, state);
    const auto sums = nlohmann::json::parse(record(resume_from, state.extra, "loss_sums"), nullptr, false);
    if (!sums.is_array() || sums.size() != static_cast<size_t>(world) || !sums[rank].is_number())
      throw ValueError(resume_from + ": the checkpoint's 'loss_sums' record does not hold one number per rank");
    loss_sum = sums[rank].get<double>();
    skipped_steps = record_integer(resume_from, state.extra, "skipped_steps");
    epoch_seconds_before = record_double(resume_from, state.extra, "epoch_seconds");
    run_seconds_before = record_double(resume_from, state.extra, "run_seconds");
  }

  const auto run_start = Clock::now();
  auto epoch_start = Clock::now();
  const auto save = [&](bool run_done) {
    std::vector<double> sums(static_cast<size_t>(world), 0.0);
    sums[static_cast<size_t>(rank)] = loss_sum;
#if EMBER_HAVE_MPI
    if (options.ddp && !run_done) {  // each slot is one rank's sum plus zeros: exact
      Tensor t = tensor(sums, {world});
      dist::all_reduce(t, dist::ReduceOp::Sum);
      sums = t.to_vector<double>();
    }
#endif
    if (rank != 0) return;
    state.extra = {{"config", options.config_key},
                   {"run", std::to_string(config.run)},
                   {"run_done", run_done ? "1" : "0"},
                   {"results", results_to_json(table)},
                   {"loss_sums", nlohmann::json(sums).dump()},
                   {"skipped_steps", std::to_string(skipped_steps)},
                   {"epoch_seconds", nlohmann::json(epoch_seconds_before + seconds_since(epoch_start)).dump()},
                   {"run_seconds", nlohmann::json(run_seconds_before + seconds_since(run_start)).dump()}};
    if (run_done) {  // the table says it all; the next run starts afresh
      serialize::TrainingState done{.extra = state.extra};
      serialize::save_checkpoint(checkpoint_path(options.out_dir), done);
    } else {
      serialize::save_checkpoint(checkpoint_path(options.out_dir), state);
    }
  };

  for (int64_t e = state.progress.epoch; e < options.epochs; ++e) {
    epoch_start = Clock::now();
    const int epoch = static_cast<int>(e) + 1;
    char label[64];
    std::snprintf(label, sizeof label, "run %d epoch %d/%d", config.run, epoch, options.epochs);
    ProgressBar bar(label, loader.size(), options.progress && rank == 0);
    bar.resume_at(state.progress.batch);
    auto pass = loader.epoch(e, state.progress.batch);
    for (auto& batch : pass) {
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
      bar.update(l, x.shape()[0]);
      state.progress = {e, pass.batch_index() + 1, state.progress.step + 1};
      if (options.checkpoint_every > 0 && state.progress.step % options.checkpoint_every == 0) save(false);
    }
    bar.finish();
    EpochResult r;
    r.run = config.run;
    r.epoch = epoch;
    r.loss = loader.size() ? loss_sum / static_cast<double>(loader.size()) : 0;
#if EMBER_HAVE_MPI
    if (options.ddp) {  // the mean over the ranks' shards
      Tensor l = full({1}, r.loss, {kFloat64});
      dist::all_reduce(l, dist::ReduceOp::Avg);
      r.loss = l.item<double>();
    }
#endif
    r.epoch_duration = epoch_seconds_before + seconds_since(epoch_start);
    r.accuracy = rank == 0 ? test_accuracy(*net, test_set, device) : 0;
    r.run_duration = run_seconds_before + seconds_since(run_start);
    r.config = config;
    if (writer) {
      writer->add_scalar("loss", r.loss, epoch);
      writer->add_scalar("accuracy", r.accuracy, epoch);
    }
    table.push_back(r);
    loss_sum = 0;
    epoch_seconds_before = 0;
    state.progress = {e + 1, 0, state.progress.step};
  }
  if (options.amp == "fp16" && rank == 0)
    std::printf("amp %s: %lld steps skipped for inf/NaN gradients, final loss scale %g\n", options.amp.c_str(),
                static_cast<long long>(skipped_steps), scaler.get_scale());
  if (options.half && rank == 0) report_half_inference(*net, test_set, device);
  if (rank != 0) return;
  writer->close();
  serialize::save_safetensors(net->state_dict(), run_dir + "/model.safetensors",
                              {{"network", config.model == "mlp" ? "MLP 784-1024-1024-10" : "seed FashionMNIST CNN"},
                               {"model", config.model},
                               {"epochs", std::to_string(options.epochs)}});
#if EMBER_HAVE_ONNX
  if (options.onnx) {
    // Traced on two images' worth of input; the file runs at any batch size.
    const Tensor example = rand({2, 1, 28, 28}, {kFloat32, device});
    onnx::save(*net, {example}, run_dir + "/model.onnx");
  }
#endif
  if (options.checkpoint_every > 0) save(true);
}

}  // namespace train
