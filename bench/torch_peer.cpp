// Running the PyTorch peer script in a child process (posix_spawn, its stdout read
// through a pipe, its stderr left on ours so that its warnings and errors show).
//
// The child gets the parent's environment with four variables replaced. PyTorch's
// convolutions go to oneDNN and its Linear layers to the system BLAS (OpenBLAS on
// Debian), which reads OPENBLAS_CORETYPE once when it loads: SkylakeX selects its
// AVX-512 kernels, Haswell its AVX2 ones (the development machine presets Haswell;
// see openblas_peer.cpp). OpenBLAS keeps one thread because PyTorch already runs
// its ops on OMP_NUM_THREADS OpenMP threads; two thread pools on the same cores
// would fight. OPENBLAS_L2_SIZE is set to the true L2 size, as for the gemm peer.
#include "bench/torch_peer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace ember::bench {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string script_path(const std::string& script = "torch_seed_net.py") {
#ifdef EMBER_BENCH_SOURCE_DIR
  return std::string(EMBER_BENCH_SOURCE_DIR) + "/peers/" + script;
#else
  return "bench/peers/" + script;
#endif
}

std::map<std::string, std::string> peer_overrides(int threads) {
  std::map<std::string, std::string> env;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    env["OPENBLAS_CORETYPE"] = "SkylakeX";
  else if (__builtin_cpu_supports("avx2"))
    env["OPENBLAS_CORETYPE"] = "Haswell";
#endif
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) env["OPENBLAS_L2_SIZE"] = std::to_string(l2 / 1024);
  env["OPENBLAS_NUM_THREADS"] = "1";
  env["OMP_NUM_THREADS"] = std::to_string(threads);
  return env;
}

// Runs argv with the environment changed by `overrides`; its stdout in *out.
// Returns the exit status (or -1 with *why set when it could not run).
int spawn_and_read(const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& overrides, std::string* out,
                   std::string* why, bool quiet_stderr = false) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!overrides.count(key)) env_store.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& s : argv_store) args.push_back(s.data());
  args.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) {
    *why = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  if (quiet_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *why = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out->append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = argv[0] + " killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}

double status_field_mib(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, len, field) == 0) return std::stod(line.substr(len)) / 1024.0;  // kB
  return -1;
}

}  // namespace

bool torch_peer_available(std::string* why) {
  static const std::string reason = [] {
    if (access(kPython, X_OK) != 0) return std::string(kPython) + " not found";
    if (access(script_path().c_str(), R_OK) != 0) return script_path() + " not found";
    std::string out, err;
    const int rc = spawn_and_read({kPython, "-c", "import torch"}, {}, &out, &err, true);
    if (rc != 0) return err.empty() ? std::string("python3 cannot import torch; scripts/install-peers installs it") : err;
    return std::string();
  }();
  if (why) *why = reason;
  return reason.empty();
}

std::optional<nlohmann::json> run_json_child(const std::vector<std::string>& argv,
                                             const std::map<std::string, std::string>& overrides,
                                             std::string* why) {
  std::string out;
  const int rc = spawn_and_read(argv, overrides, &out, why);
  if (rc < 0) return std::nullopt;
  const std::string name = argv.size() > 1 ? argv[1].substr(argv[1].find_last_of('/') + 1) : argv[0];
  if (rc != 0) {
    *why = name + " exited with status " + std::to_string(rc);
    return std::nullopt;
  }
  // The result is the last line that parses as a JSON object.
  std::istringstream lines(out);
  std::string line;
  std::optional<nlohmann::json> result;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) result = std::move(j);
  }
  if (!result) *why = name + " printed no JSON line";
  return result;
}

std::optional<nlohmann::json> run_torch_peer(const std::vector<std::string>& args, int threads,
                                             std::string* why, const std::string& script) {
  std::vector<std::string> argv = {kPython, script_path(script)};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--threads");
  argv.push_back(std::to_string(threads));
  return run_json_child(argv, peer_overrides(threads), why);
}

std::string torch_peer_environment(int threads) {
  std::string s;
  for (const auto& [k, v] : peer_overrides(threads)) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

double peak_rss_mib() { return status_field_mib("VmHWM:"); }
double current_rss_mib() { return status_field_mib("VmRSS:"); }

}  // namespace ember::bench
