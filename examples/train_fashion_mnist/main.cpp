// train_fashion_mnist: trains the seed network on FashionMNIST for every
// combination of the listed learning rates, batch sizes, worker counts and
// devices (like the seed documents' run manager), prints a results table and
// writes results.csv, results.json, each run's model (safetensors) and TensorBoard
// event files under --out. --checkpoint-every saves the training state as it goes
// and --resume continues a stopped grid from it, ending with the same bytes.
// docs/training.md describes the options and outputs, docs/checkpoints.md resuming.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "dist/dist.h"
#include "ember.h"
#include "nn/data/fashion_mnist.h"
#include "results.h"
#include "run_manager.h"

int main(int argc, char** argv) {
  CLI::App app{"Train Ember's seed CNN on FashionMNIST"};
  std::vector<std::string> devices{"auto"};
  std::vector<double> lrs{0.01};
  std::vector<int64_t> batch_sizes{100};
  std::vector<int> workers{0};
  train::TrainOptions options;
  std::string data_dir = ember::data::FashionMNIST::kDefaultRoot, optimizer = "adam", model = "network";
  int threads = 2;
  bool quiet = false;
  app.add_option("--device", devices, "auto|cpu|cuda[:N], comma separated (auto: CUDA when available)")
      ->delimiter(',');
  app.add_option("--lr", lrs, "learning rates, comma separated")->delimiter(',');
  app.add_option("--batch-size", batch_sizes, "batch sizes, comma separated")->delimiter(',');
  app.add_option("--num-workers", workers, "DataLoader worker threads, comma separated")->delimiter(',');
  app.add_option("--epochs", options.epochs, "epochs per run")->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "seed for initialisation and shuffling");
  app.add_option("--out", options.out_dir, "folder for results, models and TensorBoard logs");
  app.add_option("--data", data_dir, "folder with the FashionMNIST IDX files");
  app.add_option("--optimizer", optimizer, "adam or sgd (momentum 0.9)")->check(CLI::IsMember({"adam", "sgd"}));
  app.add_option("--model", model, "network (the seed CNN) or mlp (784-1024-1024-10)")
      ->check(CLI::IsMember({"network", "mlp"}));
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  app.add_option("--train-limit", options.train_limit, "train on the first N images only (0: all)");
  app.add_flag("--quiet", quiet, "no progress bars");
  bool no_shuffle = false;
  app.add_flag("--no-shuffle", no_shuffle, "train on the images in file order (a loop over slices does so)");
  app.add_flag("--ddp", options.ddp, "data-parallel over MPI ranks: mpirun -np N train_fashion_mnist --ddp");
  app.add_option("--amp", options.amp, "mixed precision: fp16 (autocast + GradScaler) or bf16 (autocast)")
      ->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_flag("--half", options.half, "after training, run inference in float16 and compare with float32");
  app.add_flag("--onnx", options.onnx, "also write each trained model as model.onnx (ONNX, opset 17)");
  std::string resume_dir;
  app.add_option("--checkpoint-every", options.checkpoint_every,
                 "save the training state to OUT/checkpoint.safetensors every N steps (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--resume", resume_dir, "continue from DIR/checkpoint.safetensors (same settings as its run)");
  CLI11_PARSE(app, argc, argv);
#if !EMBER_HAVE_ONNX
  if (options.onnx) {
    std::fprintf(stderr, "--onnx: this Ember is built without ONNX support (meson -Donnx=enabled needs libonnx-dev)\n");
    return 2;
  }
#endif
  options.progress = !quiet;
  options.shuffle = !no_shuffle;

  try {
    if (options.ddp) {
#if EMBER_HAVE_MPI
      ember::dist::init_process_group(ember::dist::Backend::MPI);
      // Rank 0 alone prints; the others only train.
      if (ember::dist::get_rank() != 0 && !std::freopen("/dev/null", "w", stdout))
        throw ember::ValueError("--ddp: cannot silence rank " + std::to_string(ember::dist::get_rank()));
#else
      throw ember::DistError("--ddp needs Ember built with MPI");
#endif
    }
    ember::set_num_threads(threads);
    for (auto& d : devices) {
      if (d == "auto") d = ember::cuda::is_available() ? "cuda" : "cpu";
      const ember::Device dev(d);  // validates the string
      if (dev.is_cuda() && !ember::cuda::is_available())
        throw ember::DeviceError(
            "CUDA is not available: Ember was built without CUDA support or no CUDA device is present");
    }
    for (int64_t b : batch_sizes)
      if (b < 1) throw ember::ValueError("--batch-size values must be positive");
    for (int w : workers)
      if (w < 0) throw ember::ValueError("--num-workers values must be non-negative");
    const ember::data::FashionMNIST train_set(data_dir, true), test_set(data_dir, false);
    std::printf("FashionMNIST: %lld training and %lld test images from %s\n",
                static_cast<long long>(train_set.size()), static_cast<long long>(test_set.size()), data_dir.c_str());
    int rank = 0, world = 1;
#if EMBER_HAVE_MPI
    if (options.ddp) rank = ember::dist::get_rank(), world = ember::dist::get_world_size();
#endif
    // The settings a resumed grid must share with the one that wrote the checkpoint.
    std::ostringstream key;
    const auto list = [&](const char* name, const auto& values) {
      key << name << '=';
      for (size_t i = 0; i < values.size(); ++i) key << (i ? "," : "") << values[i];
      key << ' ';
    };
    list("lr", lrs);
    list("batch_size", batch_sizes);
    list("workers", workers);
    list("device", devices);
    key << "optimizer=" << optimizer << " model=" << model << " epochs=" << options.epochs << " seed=" << options.seed
        << " train_limit=" << options.train_limit << " shuffle=" << options.shuffle << " amp=" << options.amp
        << " ranks=" << world;
    options.config_key = key.str();

    std::vector<train::EpochResult> rows;
    std::string resume_from;
    train::CheckpointInfo resume;
    if (!resume_dir.empty()) {
      resume_from = train::checkpoint_path(resume_dir);
      resume = train::read_checkpoint(resume_from, options);
      rows = resume.table;
      std::printf("resuming from %s: run %d%s\n", resume_from.c_str(), resume.run,
                  resume.run_done ? " (finished)" : "");
    }
    const auto runs = train::expand_grid(lrs, batch_sizes, workers, devices, optimizer, model);
    for (const auto& run : runs) {
      if (run.run < resume.run || (run.run == resume.run && resume.run_done)) continue;  // done before the stop
      std::printf("run %d/%zu: lr %g, batch size %lld, workers %d, device %s\n", run.run, runs.size(), run.lr,
                  static_cast<long long>(run.batch_size), run.num_workers, run.device.c_str());
      train::train_run(run, options, train_set, test_set, rows, run.run == resume.run ? resume_from : "");
      for (const auto& r : rows)
        if (r.run == run.run)
          std::printf("run %d epoch %d: loss %.4f, test accuracy %.4f (%.1f s)\n", r.run, r.epoch, r.loss,
                      r.accuracy, r.epoch_duration);
      // After every run, so a stopped grid keeps what it finished; rank 0 alone writes files.
      if (rank == 0) train::write_results(rows, options.out_dir);
    }
    if (rank == 0 && resume.run_done && resume.run == static_cast<int>(runs.size())) {
      std::filesystem::create_directories(options.out_dir);  // the grid had finished: its files again
      train::write_results(rows, options.out_dir);
    }
    std::printf("\n%s\nresults: %s/results.csv, %s/results.json; models and TensorBoard logs in %s/run-*/\n",
                train::results_table(rows).c_str(), options.out_dir.c_str(), options.out_dir.c_str(),
                options.out_dir.c_str());
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 2;
  }
  return 0;
}
