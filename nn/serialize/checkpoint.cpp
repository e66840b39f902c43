// Checkpoints as one safetensors file: each part's state_dict under a prefix
// ("model/", "optimizer/", "scaler/", "scheduler/", "generator/"), the counters,
// the loader's order settings and the caller's records in the metadata, and a
// CRC-32C over all of it. Atomicity comes from save_safetensors (AtomicFile).
#include "nn/serialize/checkpoint.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <set>

#include "kernels/base/error.h"
#include "nn/serialize/crc32c.h"
#include "nn/serialize/safetensors.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::serialize {
namespace {

constexpr const char* kFormat = "ember.checkpoint";
constexpr const char* kVersion = "1";

// The settings the order of an epoch's batches depends on (the rank aside).
std::string loader_settings(const data::DataLoader& loader) {
  const auto& o = loader.options();
  return msg("shuffle=", o.shuffle ? 1 : 0, " seed=", o.seed, " batch_size=", o.batch_size,
             " drop_last=", o.drop_last ? 1 : 0, " num_replicas=", o.num_replicas, " batches=", loader.size());
}

void add_part(NamedTensors& out, const std::string& prefix, const NamedTensors& part) {
  for (const auto& [name, t] : part) out.emplace_back(prefix + name, t.detach().cpu().contiguous());
}

// CRC-32C over every tensor (name, dtype, shape, bytes; by name, so the order the
// reader returns them in does not matter) and every metadata entry but "crc32c".
uint32_t checksum(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<const std::pair<std::string, Tensor>*> by_name;
  for (const auto& nt : tensors) by_name.push_back(&nt);
  std::sort(by_name.begin(), by_name.end(), [](auto* a, auto* b) { return a->first < b->first; });
  uint32_t crc = 0;
  auto text = [&](const std::string& s) { crc = crc32c(s.c_str(), s.size() + 1, crc); };  // with its NUL
  for (const auto* nt : by_name) {
    const Tensor& t = nt->second;
    text(nt->first);
    text(dtype_name(t.dtype()));
    text(shape_str(t.shape()));
    if (t.numel() > 0) crc = crc32c(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), crc);
  }
  for (const auto& [k, v] : metadata)
    if (k != "crc32c") text(k), text(v);
  return crc;
}

std::string hex(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// Temporary files of AtomicFile ("<name>.tmp.<pid>.<n>") beside `path` whose
// writer no longer runs: a writer killed mid-save leaves one behind.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // the save itself reports a missing folder
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    long long pid = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || end == rest.data() + rest.size() || *end != '.' || pid <= 0) continue;
    if (pid == ::getpid()) continue;  // another thread of ours may be writing it
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back((dir / name).string());
  }
  ::closedir(d);
  for (const std::string& f : stale) ::unlink(f.c_str());
}

struct Contents {
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
  std::set<std::string> parts;
};

int64_t integer(const std::string& path, const std::map<std::string, std::string>& metadata, const char* key) {
  const auto it = metadata.find(key);
  int64_t v = 0;
  if (it != metadata.end()) {
    const std::string& s = it->second;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size() && v >= 0) return v;
  }
  throw FormatError(msg(path, ": checkpoint metadata '", key, "' is missing or not a non-negative integer"));
}

// Reads the file once and checks format, version and checksum.
Contents read_checked(const std::string& path) {
  Contents c;
  // One open for tensors and metadata: a checkpoint renamed over this one while it
  // is read cannot mix the two versions (which the checksum would then refuse).
  c.tensors = load_safetensors(path, c.metadata);
  const auto format = c.metadata.find("format");
  if (format == c.metadata.end() || format->second != kFormat)
    throw FormatError(path + ": not an Ember checkpoint (its metadata has no \"format\": \"ember.checkpoint\")");
  const std::string version = c.metadata.count("version") ? c.metadata.at("version") : "";
  if (version != kVersion)
    throw FormatError(msg(path, ": checkpoint version '", version, "' is not one this Ember reads (", kVersion, ")"));
  const auto stored = c.metadata.find("crc32c");
  const std::string computed = hex(checksum(c.tensors, c.metadata));
  if (stored == c.metadata.end() || stored->second != computed)
    throw FormatError(msg(path, ": checkpoint checksum mismatch (stored ",
                          stored == c.metadata.end() ? "none" : stored->second, ", computed ", computed,
                          "): the file is damaged"));
  const std::string& parts = c.metadata.count("parts") ? c.metadata.at("parts") : "";
  for (size_t at = 0; at < parts.size();) {
    const size_t comma = std::min(parts.find(',', at), parts.size());
    c.parts.insert(parts.substr(at, comma - at));
    at = comma + 1;
  }
  return c;
}

void fill_info(const std::string& path, const Contents& c, TrainingState& state) {
  state.progress = {integer(path, c.metadata, "epoch"), integer(path, c.metadata, "batch"),
                    integer(path, c.metadata, "step")};
  state.extra.clear();
  for (const auto& [k, v] : c.metadata)
    if (k.rfind("extra.", 0) == 0) state.extra[k.substr(6)] = v;
}

// The tensors of one part, their prefix removed.
NamedTensors part(const Contents& c, const std::string& prefix) {
  NamedTensors out;
  for (const auto& [name, t] : c.tensors)
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name.substr(prefix.size()), t);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainingState& state) {
  NamedTensors tensors;
  std::string parts;
  auto note = [&](const char* name) { parts += parts.empty() ? name : std::string(",") + name; };
  if (state.model) add_part(tensors, "model/", state.model->state_dict()), note("model");
  if (state.optimizer) add_part(tensors, "optimizer/", state.optimizer->state_dict()), note("optimizer");
  if (state.scaler) add_part(tensors, "scaler/", state.scaler->state_dict()), note("scaler");
  if (state.scheduler) add_part(tensors, "scheduler/", state.scheduler->state_dict()), note("scheduler");
  for (const auto& [name, gen] : state.generators) {
    if (!gen) throw ValueError(msg("save_checkpoint: generator '", name, "' is null"));
    const std::vector<uint8_t> bytes = gen->get_state();
    Tensor t = empty({static_cast<int64_t>(bytes.size())}, kUInt8);
    std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(t.data_ptr()));
    tensors.emplace_back("generator/" + name, t);
  }
  if (state.loader) note("loader");

  std::map<std::string, std::string> metadata{{"format", kFormat},
                                              {"version", kVersion},
                                              {"parts", parts},
                                              {"epoch", std::to_string(state.progress.epoch)},
                                              {"batch", std::to_string(state.progress.batch)},
                                              {"step", std::to_string(state.progress.step)}};
  if (state.loader) metadata["loader"] = loader_settings(*state.loader);
  for (const auto& [k, v] : state.extra) metadata["extra." + k] = v;
  metadata["crc32c"] = hex(checksum(tensors, metadata));
  remove_stale_temporaries(path);
  save_safetensors(tensors, path, metadata);
}

TrainingState read_checkpoint_info(const std::string& path) {
  const Contents c = read_checked(path);
  TrainingState state;
  fill_info(path, c, state);
  return state;
}

void load_checkpoint(const std::string& path, TrainingState& state) {
  const Contents c = read_checked(path);
  TrainingState info;
  fill_info(path, c, info);
  // Every check before the first change.
  auto require = [&](bool wanted, const char* name) {
    if (wanted && !c.parts.count(name)) throw ValueError(msg(path, ": the checkpoint holds no ", name, " state"));
  };
  require(state.model, "model");
  require(state.optimizer, "optimizer");
  require(state.scaler, "scaler");
  require(state.scheduler, "scheduler");
  require(state.loader, "loader");
  std::vector<std::vector<uint8_t>> generator_states;
  for (const auto& [name, gen] : state.generators) {
    if (!gen) throw ValueError(msg("load_checkpoint: generator '", name, "' is null"));
    const NamedTensors found = part(c, "generator/" + name);
    if (found.size() != 1 || !found[0].first.empty() || found[0].second.dtype() != kUInt8)
      throw ValueError(msg(path, ": the checkpoint holds no generator '", name, "'"));
    const Tensor& t = found[0].second;
    const auto* p = static_cast<const uint8_t*>(t.data_ptr());
    generator_states.emplace_back(p, p + t.numel());
    Generator probe;
    probe.set_state(generator_states.back());  // a bad state raises here, before any change
  }
  if (state.loader) {
    const std::string saved = c.metadata.count("loader") ? c.metadata.at("loader") : "";
    const std::string mine = loader_settings(*state.loader);
    if (saved != mine)
      throw ValueError(msg(path, ": the checkpoint's data order was made with DataLoader settings '", saved,
                           "' but this loader has '", mine, "'"));
  }

  if (state.model) state.model->load_state_dict(part(c, "model/"));
  if (state.optimizer) state.optimizer->load_state_dict(part(c, "optimizer/"));
  if (state.scaler) state.scaler->load_state_dict(part(c, "scaler/"));
  if (state.scheduler) state.scheduler->load_state_dict(part(c, "scheduler/"));
  for (size_t i = 0; i < state.generators.size(); ++i) state.generators[i].second->set_state(generator_states[i]);
  state.progress = info.progress;
  state.extra = info.extra;
}

}  // namespace ember::serialize
