// Trains the seed network for one RunConfig: per epoch a pass over the shuffled
// training set with a progress bar, then test accuracy; logs loss and accuracy to
// TensorBoard and saves the trained model as safetensors. With checkpoints on, it
// saves its whole state every N steps and can resume from such a checkpoint.
#pragma once

#include <string>
#include <vector>

#include "nn/data/fashion_mnist.h"
#include "run_config.h"

namespace train {

struct TrainOptions {
  int epochs = 5;
  uint64_t seed = 0;
  std::string out_dir = "runs";
  int64_t train_limit = 0;  // use only the first N training images (0: all)
  // Shuffle the training images each epoch (from the seed); off, batches are the
  // images in file order, as a loop over slices of the training tensors visits them.
  bool shuffle = true;
  bool progress = true;
  // Data-parallel over the MPI ranks (mpirun -np N ... --ddp): each rank trains on
  // its shard with batch_size / N, DDP averages the gradients; rank 0 alone
  // evaluates and writes files.
  bool ddp = false;
  std::string amp;    // "" (float32), "fp16" (autocast + GradScaler) or "bf16" (autocast) (docs/amp.md)
  bool half = false;  // after training, also evaluate the model in float16 and compare
  bool onnx = false;  // also write each trained model as {run_dir}/model.onnx (onnx::save)
  // Every this many optimizer steps (0: never) rank 0 writes {out_dir}/checkpoint.safetensors
  // (docs/checkpoints.md); also once at the end of each run.
  int64_t checkpoint_every = 0;
  // What the checkpoint is checked against on resume: the settings that change the
  // results (lists of the grid, epochs, seed, ...), as text.
  std::string config_key;
};

// The checkpoint file of an output folder.
std::string checkpoint_path(const std::string& dir);

// The run manager's view of a checkpoint: which run it is in, whether that run
// is finished, and the results table so far (every epoch of every run finished).
struct CheckpointInfo {
  int run = 0;
  bool run_done = false;
  std::vector<EpochResult> table;
};
// ValueError when the checkpoint was written for another configuration.
CheckpointInfo read_checkpoint(const std::string& path, const TrainOptions& options);

// `table`: the rows of the runs before this one (saved in each checkpoint); the
// run's own rows are appended to it as its epochs end. `resume_from`: a checkpoint
// of this run to continue from ("" to start afresh).
void train_run(const RunConfig& config, const TrainOptions& options, const ember::data::FashionMNIST& train_set,
               const ember::data::FashionMNIST& test_set, std::vector<EpochResult>& table,
               const std::string& resume_from = "");

}  // namespace train
