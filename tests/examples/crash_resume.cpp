// Crash test for checkpoints, in the spirit of SQLite's crash tests: runs a
// training command to the end once, then, trial after trial, runs it again with
// checkpoints on and kills it with SIGKILL at random moments (some timed, some
// the moment a checkpoint's temporary file appears, so mid-write), resumes it,
// and checks after every kill that the checkpoint is whole (read_checkpoint_info
// verifies its checksum) and never gone once written, and at the end that the
// model file is byte for byte the uninterrupted run's.
//
//   crash_resume TRIALS SEED WORK_DIR CHECKPOINT_EVERY [--data-subset DIR TRAIN TEST] -- COMMAND ARGS...
//
// COMMAND is train_fashion_mnist, or mpirun ... train_fashion_mnist --ddp; the
// driver appends --out, --checkpoint-every and --resume. --data-subset writes the
// first TRAIN training and TEST test images of the FashionMNIST files in DIR to
// WORK_DIR/data and appends --data for it: reading the whole set (70,000 images,
// gzipped) would take most of each launch's time. A kill takes the child and every
// process below it (mpirun's ranks sit in process groups of their own), as a job
// scheduler killing the whole job would.
// CI runs a few trials (tests/examples/meson.build); scripts/crash-stress 200.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/base/error.h"
#include "nn/data/idx.h"
#include "nn/serialize/checkpoint.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The run, epoch, loss and accuracy columns of results.csv (durations differ).
std::string results_without_times(const fs::path& p) {
  std::istringstream in(read_file(p));
  std::string line, out;
  while (std::getline(in, line)) {
    size_t cut = 0;
    for (int commas = 0; commas < 4 && cut != std::string::npos; ++commas) cut = line.find(',', cut + 1);
    out += line.substr(0, cut) + "\n";
  }
  return out;
}

pid_t start(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group: killing -pid reaches mpirun's ranks too
    FILE* f = std::fopen(log.c_str(), "a");
    if (f) dup2(fileno(f), 1), dup2(fileno(f), 2);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::perror("execvp");
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before any kill
  return pid;
}

// Waits for the child; true when it exited 0.
// Every descendant of `root`, from /proc's parent links.
std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> links;  // (pid, ppid)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');  // the command may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    long long ppid = 0;
    if (rest >> state >> ppid) links.emplace_back(static_cast<pid_t>(std::stoll(name)), static_cast<pid_t>(ppid));
  }
  std::vector<pid_t> out{root};
  for (size_t i = 0; i < out.size(); ++i)
    for (const auto& [pid, ppid] : links)
      if (ppid == out[i]) out.push_back(pid);
  out.erase(out.begin());
  return out;
}

// SIGKILL for the child, its process group and every process below it: mpirun
// starts its ranks in process groups of their own, and a rank that outlived
// mpirun would go on training and writing checkpoints beside the resumed job.
// Stopped first, so none can act between the kills.
void kill_job(pid_t pid) {
  kill(-pid, SIGSTOP);
  std::vector<pid_t> below = descendants(pid);
  for (pid_t p : below) kill(p, SIGSTOP);
  for (pid_t p : descendants(pid)) below.push_back(p);  // any started meanwhile
  kill(-pid, SIGKILL);
  for (pid_t p : below) kill(p, SIGKILL);
}

bool finish(pid_t pid, int* status_out = nullptr) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (status_out) *status_out = status;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Event files in run-1/tensorboard: each process opens one as its training starts
// (after loading the data), so a new one marks the start of the part worth killing.
int event_files(const fs::path& dir) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "run-1/tensorboard", ec)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

// The highest counter n of a checkpoint temporary file "checkpoint.safetensors.tmp.<pid>.<n>"
// present (AtomicFile numbers a process's files in order, and during training only
// checkpoints use it), or -1 when there is none.
int temporary_present(const fs::path& dir) {
  std::error_code ec;
  int highest = -1;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint.safetensors.tmp.", 0) == 0)
      highest = std::max(highest, std::atoi(name.substr(name.rfind('.') + 1).c_str()));
  }
  return highest;
}

// The first n items of an IDX file, written plain (FashionMNIST reads either).
void write_idx_prefix(const std::string& from, const fs::path& to, int64_t n) {
  const ember::Tensor t = ember::data::read_idx(from);
  n = std::min<int64_t>(n, t.size(0));
  std::string out{'\0', '\0', '\x08', static_cast<char>(t.dim())};
  for (int64_t d = 0; d < t.dim(); ++d) {
    const auto size = static_cast<uint32_t>(d == 0 ? n : t.size(d));
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(size >> shift));
  }
  const int64_t row = t.numel() / t.size(0);
  out.append(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(n * row));
  std::ofstream(to, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
}

struct Counts {
  int trials = 0, kills = 0, kills_mid_write = 0, kills_mid_write_over_previous = 0, kills_before_first = 0;
  int checkpoints_verified = 0;
  int finished_before_kill = 0, failures = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const bool subset = argc > 9 && std::strcmp(argv[5], "--data-subset") == 0;
  const int dash = subset ? 9 : 5;
  if (argc < dash + 2 || std::strcmp(argv[dash], "--") != 0) {
    std::fprintf(stderr,
                 "usage: crash_resume TRIALS SEED WORK_DIR CHECKPOINT_EVERY [--data-subset DIR TRAIN TEST] -- "
                 "COMMAND ARGS...\n");
    return 2;
  }
  const int trials = std::atoi(argv[1]);
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  const fs::path work = argv[3];
  const std::string every = argv[4];
  std::vector<std::string> command(argv + dash + 1, argv + argc);
  fs::remove_all(work);
  fs::create_directories(work);
  if (subset) {
    const std::string src = argv[6];
    const fs::path data = work / "data";
    fs::create_directories(data);
    try {
      for (const char* split : {"train", "t10k"})
        for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"})
          write_idx_prefix(src + "/" + split + kind + ".gz", data / (std::string(split) + kind),
                           std::atoll(std::strcmp(split, "train") == 0 ? argv[7] : argv[8]));
    } catch (const ember::Error& e) {
      std::fprintf(stderr, "crash_resume: --data-subset: %s\n", e.what());
      return 2;
    }
    command.push_back("--data");
    command.push_back(data.string());
  }
  const fs::path log = work / "children.log";

  // The uninterrupted run, without checkpoints: writing them must change nothing.
  const fs::path ref = work / "reference";
  std::vector<std::string> ref_args = command;
  for (const char* a : {"--out", ref.c_str()}) ref_args.push_back(a);
  const auto t0 = Clock::now();
  const pid_t ref_pid = start(ref_args, log);
  auto train_start = t0;
  int ref_status = 0;
  while (waitpid(ref_pid, &ref_status, WNOHANG) == 0) {
    if (event_files(ref) == 0) train_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (!(WIFEXITED(ref_status) && WEXITSTATUS(ref_status) == 0)) {
    std::fprintf(stderr, "crash_resume: the uninterrupted run failed; see %s\n", log.c_str());
    return 2;
  }
  const double run_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double train_seconds = std::chrono::duration<double>(Clock::now() - train_start).count();
  const std::string want_model = read_file(ref / "run-1/model.safetensors");
  const std::string want_results = results_without_times(ref / "results.csv");
  if (want_model.empty()) {
    std::fprintf(stderr, "crash_resume: the uninterrupted run wrote no run-1/model.safetensors\n");
    return 2;
  }
  std::printf("crash_resume: uninterrupted run %.2f s (training %.2f s), model %zu bytes\n", run_seconds,
              train_seconds, want_model.size());

  Counts n;
  const fs::path dir = work / "trial";
  const fs::path checkpoint = dir / "checkpoint.safetensors";
  for (int trial = 0; trial < trials; ++trial) {
    ++n.trials;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const int kills = 1 + static_cast<int>(rng() % 3);
    bool had_checkpoint = false, ok = true;
    int64_t last_step = -1;
    for (int k = 0; k <= kills && ok; ++k) {
      std::vector<std::string> args = command;
      for (std::string a : {std::string("--out"), dir.string(), std::string("--checkpoint-every"), every})
        args.push_back(a);
      if (had_checkpoint) args.push_back("--resume"), args.push_back(dir.string());
      const pid_t pid = start(args, log);
      if (k == kills) {  // the last launch runs to the end
        if (!finish(pid)) {
          std::fprintf(stderr, "trial %d: the final resumed run failed; see %s\n", trial, log.c_str());
          ok = false;
        }
        break;
      }
      // Half the kills at a random moment of the training (timed from the new event
      // file), half the moment the temporary file of this process's checkpoint
      // number `nth` (0..3) appears (mid-write).
      const bool mid_write = rng() % 2 == 0;
      const int nth = static_cast<int>(rng() % 4);
      const double delay = std::uniform_real_distribution<double>(0.0, train_seconds)(rng);
      const int files_before = event_files(dir);
      const auto begin = Clock::now();
      auto started = Clock::time_point::max();
      bool exited = false;
      int status = 0;
      for (;;) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
        const auto now = Clock::now();
        if (started == Clock::time_point::max() && event_files(dir) > files_before) started = now;
        if (mid_write) {
          if (temporary_present(dir) >= nth || now - begin > std::chrono::duration<double>(4 * run_seconds)) break;
        } else if (started != Clock::time_point::max() &&
                   std::chrono::duration<double>(now - started).count() >= delay) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (exited) {  // it finished (or failed) before the moment came
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
          std::fprintf(stderr, "trial %d: a run failed on its own; see %s\n", trial, log.c_str());
          ok = false;
          break;
        }
        ++n.finished_before_kill;
      } else {
        const std::vector<pid_t> below = descendants(pid);
        kill_job(pid);
        finish(pid);
        // The ranks are not our children: wait until /proc has forgotten them.
        for (pid_t p : below)
          while (kill(p, 0) == 0) {
            char state = 0;
            std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
            std::string line;
            if (std::getline(stat, line) && line.rfind(')') != std::string::npos) state = line[line.rfind(')') + 2];
            if (state == 'Z' || state == 0) break;  // dead, waiting for init to reap it
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        ++n.kills;
        if (temporary_present(dir) >= 0) {
          ++n.kills_mid_write;
          if (fs::exists(checkpoint)) ++n.kills_mid_write_over_previous;
        }
      }
      // The checkpoint: whole, and never gone once it was there.
      if (fs::exists(checkpoint)) {
        try {
          const auto info = ember::serialize::read_checkpoint_info(checkpoint.string());
          ++n.checkpoints_verified;
          const bool mid_run = info.extra.at("run_done") == "0";  // a finished run's checkpoint counts no steps
          if (mid_run && info.progress.step < last_step) {
            std::fprintf(stderr, "trial %d: the checkpoint went back from step %lld to %lld\n", trial,
                         static_cast<long long>(last_step), static_cast<long long>(info.progress.step));
            ok = false;
          }
          if (mid_run) last_step = info.progress.step;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "trial %d: the checkpoint does not load after a kill: %s\n", trial, e.what());
          ok = false;
        }
        had_checkpoint = true;
      } else if (had_checkpoint) {
        std::fprintf(stderr, "trial %d: the checkpoint is gone after a kill\n", trial);
        ok = false;
      } else {
        ++n.kills_before_first;
      }
      if (exited) break;  // nothing left to kill: compare now
    }
    if (ok && read_file(dir / "run-1/model.safetensors") != want_model) {
      std::fprintf(stderr, "trial %d: the resumed run's model differs from the uninterrupted run's\n", trial);
      ok = false;
    }
    if (ok && results_without_times(dir / "results.csv") != want_results) {
      std::fprintf(stderr, "trial %d: the resumed run's losses or accuracies differ\n", trial);
      ok = false;
    }
    if (!ok) ++n.failures;
  }
  std::printf(
      "crash_resume: %d trials, %d kills (%d while a checkpoint was being written, %d of them with an earlier "
      "checkpoint in place; %d before the first checkpoint was complete), %d runs finished before their kill; %d "
      "checkpoints checked whole after a kill; %d failures\n",
      n.trials, n.kills, n.kills_mid_write, n.kills_mid_write_over_previous, n.kills_before_first,
      n.finished_before_kill, n.checkpoints_verified, n.failures);
  if (n.failures == 0) fs::remove_all(work);
  return n.failures == 0 ? 0 : 1;
}
