// One training run of the grid (a combination of the command line's lists) and the
// record kept per epoch: the columns of the results table, CSV and JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace train {

struct RunConfig {
  int run = 0;  // 1-based, in grid order
  double lr = 0.01;
  int64_t batch_size = 100;
  int num_workers = 0;
  std::string device = "cpu";
  std::string optimizer = "adam";
  std::string model = "network";  // see models.h
};

struct EpochResult {
  int run = 0;
  int epoch = 0;  // 1-based
  double loss = 0;  // mean training loss over the epoch's batches
  double accuracy = 0;  // on the test set after the epoch
  double epoch_duration = 0;  // seconds, training only
  double run_duration = 0;  // seconds since the run began
  RunConfig config;
};

// Every combination of the lists, in the order lr, batch size, workers, device
// (the last varies fastest), numbered from 1.
std::vector<RunConfig> expand_grid(const std::vector<double>& lrs, const std::vector<int64_t>& batch_sizes,
                                   const std::vector<int>& workers, const std::vector<std::string>& devices,
                                   const std::string& optimizer, const std::string& model = "network");

}  // namespace train
