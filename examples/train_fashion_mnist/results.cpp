// Results table, CSV and JSON (see results.h).
#include "results.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/base/error.h"
#include "nn/serialize/atomic_file.h"

namespace train {
namespace {

void write_atomically(const std::string& path, const std::string& text) {
  ember::serialize::AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

std::string results_table(const std::vector<EpochResult>& rows) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%4s %5s %8s %8s %9s %9s %8s %6s %7s %-7s\n", "run", "epoch", "loss", "accuracy",
                "epoch_s", "run_s", "lr", "batch", "workers", "device");
  os << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%4d %5d %8.4f %8.4f %9.2f %9.2f %8.4g %6lld %7d %-7s\n", r.run, r.epoch, r.loss,
                  r.accuracy, r.epoch_duration, r.run_duration, r.config.lr,
                  static_cast<long long>(r.config.batch_size), r.config.num_workers, r.config.device.c_str());
    os << line;
  }
  return os.str();
}

nlohmann::json to_json(const std::vector<EpochResult>& rows) {
  nlohmann::json json = nlohmann::json::array();
  for (const auto& r : rows)
    json.push_back({{"run", r.run}, {"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy},
                    {"epoch_duration", r.epoch_duration}, {"run_duration", r.run_duration}, {"lr", r.config.lr},
                    {"batch_size", r.config.batch_size}, {"num_workers", r.config.num_workers},
                    {"device", r.config.device}, {"optimizer", r.config.optimizer}, {"model", r.config.model}});
  return json;
}

void write_results(const std::vector<EpochResult>& rows, const std::string& out_dir) {
  std::ostringstream csv;
  csv << "run,epoch,loss,accuracy,epoch_duration,run_duration,lr,batch_size,num_workers,device\n";
  for (const auto& r : rows)
    csv << r.run << ',' << r.epoch << ',' << r.loss << ',' << r.accuracy << ',' << r.epoch_duration << ','
        << r.run_duration << ',' << r.config.lr << ',' << r.config.batch_size << ',' << r.config.num_workers << ','
        << r.config.device << '\n';
  nlohmann::json json = to_json(rows);
  for (auto& row : json) row.erase("optimizer"), row.erase("model");  // results.json keeps its columns
  write_atomically(out_dir + "/results.csv", csv.str());
  write_atomically(out_dir + "/results.json", json.dump(2) + "\n");
}

std::string results_to_json(const std::vector<EpochResult>& rows) { return to_json(rows).dump(); }

std::vector<EpochResult> results_from_json(const std::string& text) {
  std::vector<EpochResult> rows;
  try {
    for (const auto& j : nlohmann::json::parse(text)) {
      EpochResult r;
      r.run = r.config.run = j.at("run").get<int>();
      r.epoch = j.at("epoch").get<int>();
      r.loss = j.at("loss").get<double>();
      r.accuracy = j.at("accuracy").get<double>();
      r.epoch_duration = j.at("epoch_duration").get<double>();
      r.run_duration = j.at("run_duration").get<double>();
      r.config.lr = j.at("lr").get<double>();
      r.config.batch_size = j.at("batch_size").get<int64_t>();
      r.config.num_workers = j.at("num_workers").get<int>();
      r.config.device = j.at("device").get<std::string>();
      r.config.optimizer = j.at("optimizer").get<std::string>();
      r.config.model = j.at("model").get<std::string>();
      rows.push_back(r);
    }
  } catch (const nlohmann::json::exception& e) {
    throw ember::ValueError(std::string("the checkpoint's results table does not parse: ") + e.what());
  }
  return rows;
}

}  // namespace train
