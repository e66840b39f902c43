// The results of all runs: a table for the terminal, and results.csv and
// results.json under --out (each written to a temporary file, then renamed), and
// the rows as JSON text for a checkpoint (doubles written so they read back exact).
#pragma once

#include <string>
#include <vector>

#include "run_config.h"

namespace train {

std::string results_table(const std::vector<EpochResult>& rows);
void write_results(const std::vector<EpochResult>& rows, const std::string& out_dir);
std::string results_to_json(const std::vector<EpochResult>& rows);
// ValueError when `text` is not what results_to_json writes.
std::vector<EpochResult> results_from_json(const std::string& text);

}  // namespace train
