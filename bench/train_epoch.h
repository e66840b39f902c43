// The pieces of a seed-network training epoch that the train suite (CPU against
// PyTorch) and the cuda_train suite (CUDA against the CPU) both time, kept in one
// place so that the two suites measure the same loop and count the same FLOPs.
#pragma once

#include <cstdint>
#include <optional>

#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/data/fashion_mnist.h"
#include "nn/nn.h"

namespace ember::bench {

// Multiply-adds per image of the seed network's forward pass: conv1, conv2, fc1,
// fc2, out. Training adds the weight gradients (as many again) and the input
// gradients of every layer but conv1 (whose input needs none).
inline constexpr double kForwardMacs =
    6.0 * 24 * 24 * 25 + 12.0 * 8 * 8 * 150 + 192.0 * 120 + 120.0 * 60 + 60.0 * 10;
inline constexpr double kTrainFlopsPerImage = 2 * (2 * kForwardMacs + (kForwardMacs - 6.0 * 24 * 24 * 25));

// One pass of `loader`'s epoch `epoch` with cross-entropy, reading loss.item() every
// step as a logging loop does; each batch is copied to `device` first when that is a
// GPU (inside the caller's timed region). Stops after max_batches when positive.
// Returns the mean loss. With `amp` (float16 or bfloat16) the forward and the loss
// run under autocast, and for float16 backward/step go through a GradScaler, as
// train_fashion_mnist --amp does.
double train_pass(nn::Network& net, nn::optim::Optimizer& opt, const data::DataLoader& loader,
                  const Device& device, int64_t epoch, int max_batches = 0,
                  std::optional<DType> amp = std::nullopt);

// Test-set accuracy of a network on the CPU, in chunks of 1000 images, in eval mode
// (restored to train mode after).
double test_accuracy(nn::Network& net, const data::FashionMNIST& test_set);

}  // namespace ember::bench
