// Training checkpoints (nn/serialize/checkpoint.h): a run stopped at any step and
// resumed from its checkpoint ends with the bytes of the run that never stopped;
// every part of the state is needed for that; a checkpoint cut short or changed
// anywhere is refused; a failed save keeps the previous checkpoint; the errors of
// docs/errors.md by their exact text.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember.h"
#include "nn/serialize/checkpoint.h"
#include "nn/serialize/crc32c.h"
#include "support/temp_dir.h"

using namespace ember;
using namespace ember::serialize;
using Catch::Matchers::Message;
using test_support::TempDir;
namespace fs = std::filesystem;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A new file each time: truncating one in place makes ext4 flush it on close, which
// made the every-byte test below take half a minute on a busy disk.
void write_bytes(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The bytes of every tensor of a state dict, back to back.
std::string bytes_of(const nn::StateDict& sd) {
  std::string out;
  for (const auto& [name, t] : sd) {
    const Tensor c = t.contiguous();
    out.append(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return out;
}

// The checksum as docs/checkpoints.md describes it, written again here: CRC-32C
// over each tensor by name (name, dtype name, shape as printed, each with a NUL,
// then the bytes), then each metadata entry but crc32c (key and value with NULs).
std::string independent_checksum(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> by_name(tensors.begin(), tensors.end());
  uint32_t crc = 0;
  auto text = [&](const std::string& t) { crc = crc32c(t.c_str(), t.size() + 1, crc); };
  for (const auto& [name, t] : by_name) {
    text(name);
    text(dtype_name(t.dtype()));
    text(shape_str(t.shape()));
    crc = crc32c(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), crc);
  }
  for (const auto& [k, v] : metadata)
    if (k != "crc32c") text(k), text(v);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", crc);
  return hex;
}

// A small training run that uses every part of a TrainingState: dropout drawing
// from its own generator, input noise from the default one, a shuffled loader with
// workers, Adam, a GradScaler whose scale grows during the run, StepLR per epoch.
struct Trainer {
  static constexpr int64_t kEpochs = 3;  // of 8 batches (37 samples, batches of 5)

  Generator dropout_gen{77};
  std::shared_ptr<nn::Sequential> net;
  Tensor x, y;
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<nn::optim::Adam> opt;
  nn::amp::GradScaler scaler{{.init_scale = 1024, .growth_interval = 3}};
  std::unique_ptr<nn::optim::StepLR> sched;
  TrainingState state;

  Trainer() {
    manual_seed(3);
    net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dropout>(0.25, &dropout_gen), std::make_shared<nn::Linear>(8, 3)});
    Generator data_gen(5);
    x = randn({37, 4}, kFloat32, &data_gen);
    y = (rand({37}, kFloat32, &data_gen) * 3).to(kInt64);
    loader = std::make_unique<data::DataLoader>(x, y, data::DataLoaderOptions{.batch_size = 5, .shuffle = true,
                                                                              .seed = 9, .num_workers = 2});
    opt = std::make_unique<nn::optim::Adam>(net->parameters(), 0.01);
    sched = std::make_unique<nn::optim::StepLR>(*opt, 1, 0.7);
    state = TrainingState{.model = net.get(), .optimizer = opt.get(), .scaler = &scaler, .scheduler = sched.get(),
                          .loader = loader.get(),
                          .generators = {{"dropout", &dropout_gen}, {"default", &default_generator()}}};
  }

  // Trains to the end, or saves a checkpoint at step `stop_at` and returns false.
  bool run(const std::string& checkpoint = "", int64_t stop_at = -1) {
    for (int64_t e = state.progress.epoch; e < kEpochs; ++e) {
      auto epoch = loader->epoch(e, state.progress.batch);
      for (data::Batch& b : epoch) {
        const Tensor noisy = b.inputs + randn(b.inputs.shape()) * 0.05;
        const Tensor loss = nn::functional::cross_entropy((*net)(noisy), b.targets);
        opt->zero_grad();
        scaler.scale(loss).backward();
        scaler.step(*opt);
        scaler.update();
        state.progress = {e, epoch.batch_index() + 1, state.progress.step + 1};
        if (state.progress.step == stop_at) {
          save_checkpoint(checkpoint, state);
          return false;
        }
      }
      sched->step();
      state.progress = {e + 1, 0, state.progress.step};
    }
    return true;
  }
};

}  // namespace

TEST_CASE("checkpoint: a run resumed at any step ends with the uninterrupted run's bytes", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  Trainer whole;
  REQUIRE(whole.run());
  const std::string want = bytes_of(whole.net->state_dict());
  REQUIRE(whole.scaler.get_scale() > 1024);  // the scale grew: its state matters to the result

  // Stops inside an epoch, at an epoch's last batch, and after the last step.
  for (int64_t stop : {1, 5, 8, 13, 16, 23, 24}) {
    Trainer first;
    REQUIRE_FALSE(first.run(path, stop));
    Trainer resumed;
    load_checkpoint(path, resumed.state);
    CHECK(resumed.state.progress.step == stop);
    CHECK(resumed.state.progress.epoch == (stop - 1) / 8);
    CHECK(resumed.state.progress.batch == (stop - 1) % 8 + 1);
    CHECK(resumed.scaler.get_scale() == first.scaler.get_scale());
    CHECK(resumed.scaler.growth_tracker() == first.scaler.growth_tracker());
    REQUIRE(resumed.run());
    INFO("stopped at step " << stop);
    REQUIRE(bytes_of(resumed.net->state_dict()) == want);
    REQUIRE(bytes_of(resumed.opt->state_dict()) == bytes_of(whole.opt->state_dict()));
  }

  // Each part is needed: resumed without one of them, the run ends elsewhere. (The
  // scaler's, checked above, changes nothing here: a power-of-two scale that never
  // overflows float32 unscales exactly.)
  Trainer first;
  REQUIRE_FALSE(first.run(path, 11));
  auto resume_without = [&](auto drop) {
    Trainer t;
    drop(t.state);
    load_checkpoint(path, t.state);
    REQUIRE(t.run());
    return bytes_of(t.net->state_dict());
  };
  CHECK(resume_without([](TrainingState& s) { s.generators.erase(s.generators.begin()); }) != want);
  CHECK(resume_without([](TrainingState& s) { s.generators.pop_back(); }) != want);
  CHECK(resume_without([](TrainingState& s) { s.optimizer = nullptr; }) != want);
  CHECK(resume_without([](TrainingState& s) { s.scheduler = nullptr; }) != want);
  CHECK(resume_without([](TrainingState&) {}) == want);
}

TEST_CASE("checkpoint: progress and the caller's records come back; read_checkpoint_info", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors");
  nn::Linear lin(2, 2);
  TrainingState s{.model = &lin, .progress = {4, 17, 1234}, .extra = {{"table", "[{\"epoch\": 1}]"}, {"run", "3"}}};
  save_checkpoint(path, s);
  const TrainingState info = read_checkpoint_info(path);
  CHECK(info.progress.epoch == 4);
  CHECK(info.progress.batch == 17);
  CHECK(info.progress.step == 1234);
  CHECK(info.extra == s.extra);
  nn::Linear other(2, 2);
  TrainingState back{.model = &other, .extra = {{"stale", "x"}}};
  load_checkpoint(path, back);
  CHECK(back.extra == s.extra);
  CHECK(bytes_of(other.state_dict()) == bytes_of(lin.state_dict()));
  // A plain state dict saved as safetensors loads the same way: the names are the model's.
  CHECK(load_safetensors(path).front().first == "model/weight");
}

TEST_CASE("checkpoint: a file cut short or changed anywhere is refused, never half-loaded", "[checkpoint][errors]") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors"), bad = dir.file("bad.safetensors");
  Trainer t;
  REQUIRE_FALSE(t.run(path, 6));
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() > 1000);
  // Every prefix (a torn write) and every single-byte change (damage afterwards).
  int refused = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(bad, bytes.substr(0, n));
    REQUIRE_THROWS_AS(read_checkpoint_info(bad), FormatError);
    std::string flipped = bytes;
    flipped[n] = static_cast<char>(flipped[n] ^ 0x20);
    write_bytes(bad, flipped);
    Trainer target;
    const std::string before = bytes_of(target.net->state_dict());
    try {
      load_checkpoint(bad, target.state);
      FAIL("byte " << n << " of " << bytes.size() << " changed and the checkpoint still loaded: "
                    << bytes.substr(n > 40 ? n - 40 : 0, 80));
    } catch (const FormatError&) {
      ++refused;
    }
    REQUIRE(bytes_of(target.net->state_dict()) == before);
  }
  CHECK(refused == static_cast<int>(bytes.size()));
  write_bytes(bad, bytes);
  REQUIRE(read_checkpoint_info(bad).progress.step == 6);
}

TEST_CASE("checkpoint: a failed save keeps the previous one; stale temporary files go", "[checkpoint][errors]") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors");
  nn::Linear lin(40, 40);
  TrainingState s{.model = &lin, .progress = {0, 1, 1}};
  save_checkpoint(path, s);
  const std::string before = read_bytes(path);

  // The disk fills up mid-write (a file-size limit stands in for it).
  {
    std::signal(SIGXFSZ, SIG_IGN);  // report EFBIG from write() instead of killing the process
    rlimit saved{};
    REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    rlimit lowered = saved;
    lowered.rlim_cur = 2000;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lowered) == 0);
    s.progress.step = 2;
    EXPECT_ERROR(save_checkpoint(path, s), FormatError, path + ": write failed: File too large");
    setrlimit(RLIMIT_FSIZE, &saved);
  }
  REQUIRE(read_bytes(path) == before);
  REQUIRE(read_checkpoint_info(path).progress.step == 1);

  // A writer killed mid-save leaves its temporary file; the next save removes it,
  // but not one whose writer still runs (this process).
  const pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  const std::string stale = path + ".tmp." + std::to_string(child) + ".0";
  const std::string live = path + ".tmp." + std::to_string(getpid()) + ".999";
  const std::string other = path + ".tmp.notapid";
  for (const std::string& f : {stale, live, other}) write_bytes(f, "partial");
  save_checkpoint(path, s);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  CHECK(read_checkpoint_info(path).progress.step == 2);
}

TEST_CASE("checkpoint errors", "[checkpoint][errors]") {
  TempDir dir;
  const std::string path = dir.file("c.safetensors");
  EXPECT_ERROR(read_checkpoint_info(path), FormatError, path + ": cannot open for reading: No such file or directory");

  // Not a checkpoint; another version; metadata that does not parse (with a valid checksum).
  save_safetensors({{"w", ones({2})}}, path);
  EXPECT_ERROR(read_checkpoint_info(path), FormatError,
               path + ": not an Ember checkpoint (its metadata has no \"format\": \"ember.checkpoint\")");
  save_safetensors({{"w", ones({2})}}, path, {{"format", "ember.checkpoint"}, {"version", "2"}});
  EXPECT_ERROR(read_checkpoint_info(path), FormatError,
               path + ": checkpoint version '2' is not one this Ember reads (1)");
  std::map<std::string, std::string> meta{{"format", "ember.checkpoint"}, {"version", "1"}};
  save_safetensors({{"w", ones({2})}}, path, meta);
  EXPECT_ERROR(read_checkpoint_info(path), FormatError,
               path + ": checkpoint checksum mismatch (stored none, computed " +
                   independent_checksum({{"w", ones({2})}}, meta) + "): the file is damaged");
  meta["crc32c"] = "0badf00d";
  save_safetensors({{"w", ones({2})}}, path, meta);
  EXPECT_ERROR(read_checkpoint_info(path), FormatError,
               path + ": checkpoint checksum mismatch (stored 0badf00d, computed " +
                   independent_checksum({{"w", ones({2})}}, meta) + "): the file is damaged");
  // Counters another program wrote wrong, under a checksum that matches.
  meta = {{"format", "ember.checkpoint"}, {"version", "1"}, {"parts", ""}, {"epoch", "x"}, {"batch", "0"}, {"step", "0"}};
  meta["crc32c"] = independent_checksum({}, meta);
  save_safetensors({}, path, meta);
  EXPECT_ERROR(read_checkpoint_info(path), FormatError,
               path + ": checkpoint metadata 'epoch' is missing or not a non-negative integer");
  meta["epoch"] = "2";
  meta["crc32c"] = independent_checksum({}, meta);
  save_safetensors({}, path, meta);
  CHECK(read_checkpoint_info(path).progress.epoch == 2);  // the independent checksum is the one Ember computes

  // Parts the objects ask for and the file lacks.
  nn::Linear lin(2, 3);
  nn::optim::SGD sgd(lin.parameters(), 0.1);
  nn::optim::StepLR sched(sgd, 2);
  nn::amp::GradScaler scaler;
  Generator gen;
  data::DataLoader loader(zeros({10, 2}), zeros({10}), {.batch_size = 3, .shuffle = true, .seed = 4});
  save_checkpoint(path, TrainingState{.model = &lin});
  auto load = [&](TrainingState s) { load_checkpoint(path, s); };
  EXPECT_ERROR(load({.optimizer = &sgd}), ValueError, path + ": the checkpoint holds no optimizer state");
  EXPECT_ERROR(load({.scaler = &scaler}), ValueError, path + ": the checkpoint holds no scaler state");
  EXPECT_ERROR(load({.scheduler = &sched}), ValueError, path + ": the checkpoint holds no scheduler state");
  EXPECT_ERROR(load({.loader = &loader}), ValueError, path + ": the checkpoint holds no loader state");
  EXPECT_ERROR(load({.generators = {{"default", &gen}}}), ValueError,
               path + ": the checkpoint holds no generator 'default'");
  EXPECT_ERROR(load({.generators = {{"default", nullptr}}}), ValueError, "load_checkpoint: generator 'default' is null");
  EXPECT_ERROR(save_checkpoint(path, TrainingState{.generators = {{"g", nullptr}}}), ValueError,
               "save_checkpoint: generator 'g' is null");

  // A loader whose order differs from the one the checkpoint was made with.
  save_checkpoint(path, TrainingState{.loader = &loader, .progress = {1, 2, 6}});
  data::DataLoader reseeded(zeros({10, 2}), zeros({10}), {.batch_size = 3, .shuffle = true, .seed = 5});
  EXPECT_ERROR(load({.loader = &reseeded}), ValueError,
               path + ": the checkpoint's data order was made with DataLoader settings 'shuffle=1 seed=4 batch_size=3 "
                      "drop_last=0 num_replicas=1 batches=4' but this loader has 'shuffle=1 seed=5 batch_size=3 "
                      "drop_last=0 num_replicas=1 batches=4'");
  // The rank is not part of the order: rank 1 restores what rank 0 saved.
  data::DataLoader rank0(zeros({10, 2}), zeros({10}), {.batch_size = 3, .num_replicas = 2, .rank = 0});
  data::DataLoader rank1(zeros({10, 2}), zeros({10}), {.batch_size = 3, .num_replicas = 2, .rank = 1});
  save_checkpoint(path, TrainingState{.loader = &rank0});
  load({.loader = &rank1});

  // A model of another shape: the model's own error.
  save_checkpoint(path, TrainingState{.model = &lin});
  nn::Linear wider(2, 4);
  REQUIRE_THROWS_AS(load({.model = &wider}), ValueError);
}
