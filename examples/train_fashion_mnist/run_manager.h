// Trains the seed network for one RunConfig: per epoch a pass over the shuffled
// training set with a progress bar, then test accuracy; logs loss and accuracy to
// TensorBoard and saves the trained model as safetensors.
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
  std::string amp;    // "" (float32), "fp16" or "bf16": autocast + GradScaler (docs/amp.md)
  bool half = false;  // after training, also evaluate the model in float16 and compare
};

std::vector<EpochResult> train_run(const RunConfig& config, const TrainOptions& options,
                                   const ember::data::FashionMNIST& train_set,
                                   const ember::data::FashionMNIST& test_set);

}  // namespace train
