// The communication thread of a process group. Collectives are queued by the
// threads that call them and run here one at a time, in the order they were
// called, so that DDP can start a bucket's all-reduce from an autograd hook and
// keep computing while the data moves. Each collective runs in two phases:
//   1. arrival: post (number, signature) on the arrival board and wait until every
//      rank has posted the same number; compare signatures (a mismatch fails on
//      every rank with the same message, before any data moves);
//   2. transfer: the backend's executor moves the data, polling the Watchdog.
// The Watchdog turns "never finishes" into DistError: a deadline per collective and
// a look at the peers' processes every 20 ms. After a failure the group refuses all
// further collectives (their data may be half moved).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/arrival_board.h"
#include "dist/collective.h"

namespace ember::dist {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  Watchdog(const Collective& c, int rank, int size, std::chrono::milliseconds timeout, const ArrivalBoard* board);
  // Raises DistError when the deadline has passed or a peer process has exited.
  // Cheap enough to call in a polling loop: it reads the clock, and looks at the
  // peers only every 20 ms.
  void poll();
  // Yields the core a little more the longer the wait for the peers has lasted:
  // spin, then sched_yield, then short sleeps, so a waiting thread leaves the CPU
  // to compute. During the transfer it only spins and yields (see comm_thread.cpp).
  void pause();
  void set_all_arrived() {
    all_arrived_ = true;
    pauses_ = 0;
  }

 private:
  [[noreturn]] void timed_out() const;
  const Collective& c_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  const ArrivalBoard* board_;
  Clock::time_point start_, deadline_, next_peer_check_;
  bool all_arrived_ = false;
  uint64_t pauses_ = 0;
};

// True once any collective in this process has failed (MPI is then not finalized
// at exit: a dead peer would make MPI_Finalize wait forever).
bool any_collective_failed();
// Counts a failure outside a collective as one: a set-up step that gave up with an
// MPI request still pending, a teardown that had to abort NCCL.
void note_failure();

class CommThread {
 public:
  using Executor = std::function<void(Collective&, Watchdog&)>;
  CommThread(int rank, int size, std::unique_ptr<ArrivalBoard> board, Executor executor,
             std::chrono::milliseconds timeout);
  // Runs what is queued, then joins the thread.
  ~CommThread();

  // Numbers the collective, queues it and returns its handle.
  WorkPtr submit(Collective c);
  void set_timeout(std::chrono::milliseconds t) { timeout_ms_ = t.count(); }
  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(timeout_ms_.load()); }
  uint64_t started() const;
  const ArrivalBoard* board() const { return board_.get(); }

 private:
  void loop();
  void wait_for_arrival(Collective& c, Watchdog& wd);

  int rank_, size_;
  std::unique_ptr<ArrivalBoard> board_;
  Executor executor_;
  std::atomic<int64_t> timeout_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Collective> queue_;
  uint64_t next_seq_ = 1;
  bool stopping_ = false;
  std::string failure_;  // the first failure's message; empty while healthy
  std::vector<Tensor> abandoned_;  // buffers of collectives abandoned mid-transfer
  std::thread thread_;
};

}  // namespace ember::dist
