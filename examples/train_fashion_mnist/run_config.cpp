// The grid of runs (see run_config.h).
#include "run_config.h"

namespace train {

std::vector<RunConfig> expand_grid(const std::vector<double>& lrs, const std::vector<int64_t>& batch_sizes,
                                   const std::vector<int>& workers, const std::vector<std::string>& devices,
                                   const std::string& optimizer, const std::string& model) {
  std::vector<RunConfig> runs;
  for (double lr : lrs)
    for (int64_t bs : batch_sizes)
      for (int w : workers)
        for (const auto& d : devices)
          runs.push_back({static_cast<int>(runs.size()) + 1, lr, bs, w, d, optimizer, model});
  return runs;
}

}  // namespace train
