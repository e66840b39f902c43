// The results of all runs: a table for the terminal, and results.csv and
// results.json under --out (each written to a temporary file, then renamed).
#pragma once

#include <string>
#include <vector>

#include "run_config.h"

namespace train {

std::string results_table(const std::vector<EpochResult>& rows);
void write_results(const std::vector<EpochResult>& rows, const std::string& out_dir);

}  // namespace train
