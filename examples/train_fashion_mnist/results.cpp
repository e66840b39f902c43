// Results table, CSV and JSON (see results.h).
#include "results.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

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

void write_results(const std::vector<EpochResult>& rows, const std::string& out_dir) {
  std::ostringstream csv;
  csv << "run,epoch,loss,accuracy,epoch_duration,run_duration,lr,batch_size,num_workers,device\n";
  nlohmann::json json = nlohmann::json::array();
  for (const auto& r : rows) {
    csv << r.run << ',' << r.epoch << ',' << r.loss << ',' << r.accuracy << ',' << r.epoch_duration << ','
        << r.run_duration << ',' << r.config.lr << ',' << r.config.batch_size << ',' << r.config.num_workers << ','
        << r.config.device << '\n';
    json.push_back({{"run", r.run}, {"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy},
                    {"epoch_duration", r.epoch_duration}, {"run_duration", r.run_duration}, {"lr", r.config.lr},
                    {"batch_size", r.config.batch_size}, {"num_workers", r.config.num_workers},
                    {"device", r.config.device}});
  }
  write_atomically(out_dir + "/results.csv", csv.str());
  write_atomically(out_dir + "/results.json", json.dump(2) + "\n");
}

}  // namespace train
