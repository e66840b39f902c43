// The gradient reducer behind DistributedDataParallel. Parameters are grouped into
// buckets (in reverse registration order, about bucket_bytes each, one dtype per
// bucket), because backward produces the last layers' gradients first: the first
// bucket fills early and its all-reduce runs while backward computes the rest.
// A hook on every parameter copies its gradient into its bucket; when a bucket is
// full its all-reduce (average) starts on the communication thread. Buckets start
// strictly in index order, so every rank issues the same sequence of collectives.
// The hook that completes the last bucket waits for all of them and writes the
// averages back into the parameters' .grad(), so backward returns with them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "nn/module.h"

namespace ember::dist {

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  struct Bucket {
    std::vector<size_t> params;    // indices into the parameter list
    std::vector<int64_t> offsets;  // of each parameter in `flat`
    Tensor flat;                   // the bucket's gradients, end to end
    size_t pending = 0;            // parameters whose gradient has not arrived this iteration
    WorkPtr work;
  };

  // `params`: the parameters that require grad, in registration order.
  Reducer(nn::NamedTensors params, ProcessGroup& group, size_t bucket_bytes, bool find_unused_parameters);
  // Registers the hooks (they hold a weak reference, so a dead reducer is never called).
  void install_hooks();

  // Called by DDP's forward. `sync`: this iteration's backward all-reduces (false
  // inside no_sync()). `output`: traversed to find unused parameters when asked.
  void prepare_for_backward(const Tensor& output, bool sync);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const nn::NamedTensors& params() const { return params_; }

 private:
  void mark_ready(size_t param);
  void launch_ready_buckets();
  void finish();
  // Waits for what an interrupted iteration launched and raises if it left
  // parameters without gradients (see ddp.h, find_unused_parameters).
  void check_previous_iteration();

  nn::NamedTensors params_;
  ProcessGroup& group_;
  bool find_unused_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_, slot_of_;  // per parameter: its bucket, its position in it
  std::vector<bool> ready_;
  bool expecting_ = false;  // forward ran with sync: hooks reduce
  size_t next_bucket_ = 0;  // the next bucket to launch
  size_t arrived_ = 0;      // parameters marked ready this iteration
};

}  // namespace ember::dist
