// Training checkpoints: one call saves where a training loop stands (model,
// optimizer, GradScaler, LR scheduler, random generators, the data order and the
// position in the epoch, counters, the caller's own records) and one restores it,
// so that a resumed run continues bit for bit as if it had never stopped.
//
//   serialize::TrainingState state{.model = &net, .optimizer = &opt, .loader = &loader,
//                                  .generators = {{"default", &default_generator()}}};
//   if (std::filesystem::exists(path)) serialize::load_checkpoint(path, state);
//   for (int64_t e = state.progress.epoch; e < epochs; ++e, state.progress.batch = 0) {
//     auto epoch = loader.epoch(e, state.progress.batch);
//     for (Batch& b : epoch) {
//       train_step(b);
//       state.progress = {e, epoch.batch_index() + 1, state.progress.step + 1};
//       if (state.progress.step % 100 == 0) serialize::save_checkpoint(path, state);
//     }
//   }
//
// The file is safetensors (docs/checkpoints.md lists its names). It is written
// under a temporary name, fsynced, renamed over the previous checkpoint and the
// folder fsynced: a crash at any moment leaves the previous checkpoint or the new
// one, whole. A CRC-32C over the contents catches a file damaged afterwards.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/amp/grad_scaler.h"
#include "nn/data/dataloader.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"
#include "tensor/generator.h"

EMBER_API_BEGIN

namespace ember::serialize {

// Where a training loop stands.
struct TrainingProgress {
  int64_t epoch = 0;  // the epoch in progress, counted from 0
  int64_t batch = 0;  // batches of it already trained on: go on with loader.epoch(epoch, batch)
  int64_t step = 0;   // optimizer steps (or iterations) since training began
};

// What a checkpoint holds. Every pointer may be null (that part is neither saved
// nor restored); load_checkpoint requires the file to hold each part given.
struct TrainingState {
  nn::Module* model = nullptr;               // state_dict(): parameters and buffers
  nn::optim::Optimizer* optimizer = nullptr;  // lr, hyperparameters, momentum buffers, moments, steps
  nn::amp::GradScaler* scaler = nullptr;     // scale and growth tracker (nothing when disabled)
  nn::optim::StepLR* scheduler = nullptr;    // last_epoch, base_lr
  // The data order is a function of the loader's settings and the epoch: they are
  // saved, and at load they must be the same (ValueError otherwise). The rank is
  // not among them, so every rank of a data-parallel job restores one file.
  const data::DataLoader* loader = nullptr;
  // Generators by name, e.g. {"default", &default_generator()}: their get_state().
  std::vector<std::pair<std::string, Generator*>> generators{};
  TrainingProgress progress{};
  // The caller's own records, as text (a results table as JSON, a run number).
  std::map<std::string, std::string> extra{};
};

// Writes `state` to `path` (see above). Any temporary files a killed writer left
// beside `path` are removed first. FormatError on I/O failure, with the previous
// checkpoint left in place.
void save_checkpoint(const std::string& path, const TrainingState& state);

// Reads and checks the whole file (format, version, checksum, each part the state
// asks for, the loader's settings) before changing anything, then restores every
// object `state` points to and sets its progress and extra. FormatError for a file
// that is not a whole Ember checkpoint, ValueError for one that does not fit the
// objects (docs/errors.md); a load that fails in the objects' own load_state_dict
// (a model of another architecture) may leave earlier parts restored.
void load_checkpoint(const std::string& path, TrainingState& state);

// The progress and extra records of a checkpoint, after the same checks of the
// file (format, version, checksum) and without restoring anything.
TrainingState read_checkpoint_info(const std::string& path);

}  // namespace ember::serialize

EMBER_API_END
