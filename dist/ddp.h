// DistributedDataParallel: one process per device, each with a full replica of the
// module and its own share of every batch. Construction makes the replicas equal
// (checks that every rank has the same parameters, then broadcasts parameters and
// buffers from rank 0); every backward then averages the gradients over the ranks,
// in buckets whose all-reduce overlaps the rest of backward (dist/reducer.h), so
// every replica takes the same optimizer step.
//
//   dist::init_process_group();
//   auto ddp = std::make_shared<dist::DistributedDataParallel>(net);
//   nn::optim::SGD opt(ddp->parameters(), 0.1);
//   loss = cross_entropy((*ddp)(x_shard), y_shard); loss.backward(); opt.step();
#pragma once

#include "kernels/base/export.h"

#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "nn/module.h"

EMBER_API_BEGIN

namespace ember::dist {

class Reducer;

struct DDPOptions {
  // Bucket size; PyTorch's default is 25 MB.
  double bucket_cap_mb = 25;
  // Some parameters may get no gradient in an iteration (a branch not taken): each
  // forward then walks the output's graph and marks the unreached ones ready. Off,
  // such a parameter makes the next forward raise DistError naming it.
  bool find_unused_parameters = false;
  // Broadcast buffers (running statistics) from rank 0 before every forward.
  bool broadcast_buffers = true;
  // The group to average over; null: the default group.
  ProcessGroup* group = nullptr;
};

class DistributedDataParallel : public nn::Module {
 public:
  // Collective: every rank of the group must construct it. Raises DistError on
  // every rank when the ranks' parameters (names, dtypes, shapes) differ.
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options = {});
  ~DistributedDataParallel() override;

  // Runs the module; in training with grad mode on, the next backward averages
  // the gradients (unless inside no_sync()).
  Tensor forward(const Tensor& input) override;
  nn::Module& module() { return *module_; }

  // Inside its scope, forwards prepare backwards that only accumulate local
  // gradients (gradient accumulation); the first forward after it syncs the
  // accumulated sum.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.sync_) { ddp.sync_ = false; }
    ~NoSync() { ddp_.sync_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  // The module's parameter names in each bucket, first bucket first (for tests,
  // docs and the benchmark).
  std::vector<std::vector<std::string>> bucket_names() const;
  ProcessGroup& group() { return group_; }

 private:
  void check_same_model();

  std::shared_ptr<nn::Module> module_;
  DDPOptions options_;
  ProcessGroup& group_;
  std::shared_ptr<Reducer> reducer_;
  bool sync_ = true;
};

}  // namespace ember::dist

EMBER_API_END
