// The communication thread and its watchdog (see comm_thread.h).
#include "dist/comm_thread.h"

#include <sched.h>

#include <sstream>
#include <vector>

#include "kernels/base/error.h"
#include "tensor/dtype.h"

namespace ember::dist {

namespace {

std::atomic<bool> g_failed{false};

std::string ranks_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

}  // namespace

bool any_collective_failed() { return g_failed.load(); }
void note_failure() { g_failed = true; }

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "?";
}

std::string describe(const Signature& s) {
  const auto kind = static_cast<CollectiveKind>(s.kind);
  std::ostringstream os;
  os << collective_name(kind) << "(";
  if (kind != CollectiveKind::Barrier) {
    os << dtype_name(static_cast<DType>(s.dtype)) << ", " << s.numel << (s.numel == 1 ? " element" : " elements");
    if (kind == CollectiveKind::AllReduce) os << ", " << reduce_op_name(static_cast<ReduceOp>(s.arg)) << ", tag " << s.tag;
    if (kind == CollectiveKind::Broadcast) os << ", root " << s.arg;
  }
  os << ")";
  return os.str();
}

// ---- Watchdog ----

Watchdog::Watchdog(const Collective& c, int rank, int size, std::chrono::milliseconds timeout,
                   const ArrivalBoard* board)
    : c_(c), rank_(rank), size_(size), timeout_(timeout), board_(board) {
  start_ = Clock::now();
  deadline_ = start_ + timeout;
  next_peer_check_ = start_ + std::chrono::milliseconds(20);
}

void Watchdog::poll() {
  const auto now = Clock::now();
  if (board_ && now >= next_peer_check_) {
    next_peer_check_ = now + std::chrono::milliseconds(20);
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && !board_->alive(r)) {
        std::ostringstream os;
        os << c_.name() << " (collective #" << c_.seq << ") failed on rank " << rank_ << ": rank " << r
           << " has exited";
        throw DistError(os.str());
      }
  }
  if (now >= deadline_) timed_out();
}

void Watchdog::timed_out() const {
  std::ostringstream os;
  os << c_.name() << " (collective #" << c_.seq << ") timed out after " << timeout_.count() << " ms on rank " << rank_;
  if (!board_) {
    os << " (ranks on other hosts are not watched, so the late rank is unknown)";
  } else if (all_arrived_) {
    os << " after every rank had called it";
  } else {
    std::vector<int> late;
    uint64_t last = 0;
    for (int r = 0; r < size_; ++r)
      if (board_->entered(r) < c_.seq) {
        late.push_back(r);
        last = board_->entered(r);
      }
    os << ": " << ranks_list(late) << (late.size() == 1 ? " has" : " have") << " not called it";
    if (late.size() == 1) os << " (its last collective is #" << last << ")";
  }
  throw DistError(os.str());
}

void Watchdog::pause() {
  ++pauses_;
  if (pauses_ < 64) return;
  // Once every rank is in, the polls are what moves the data (MPI copies through
  // shared memory inside MPI_Test), so never sleep then: only yield the core.
  if (pauses_ < 2048 || all_arrived_) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(pauses_ < 20000 ? 20 : 200));
}

// ---- CommThread ----

CommThread::CommThread(int rank, int size, std::unique_ptr<ArrivalBoard> board, Executor executor,
                       std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), board_(std::move(board)), executor_(std::move(executor)),
      timeout_ms_(timeout.count()) {
  thread_ = std::thread([this] { loop(); });
}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

WorkPtr CommThread::submit(Collective c) {
  auto work = std::make_shared<Work>();
  c.work = work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) {
      work->finish(std::make_exception_ptr(
          DistError("process group is unusable after an earlier failure: " + failure_)));
      return work;
    }
    c.seq = next_seq_++;
    queue_.push_back(std::move(c));
  }
  cv_.notify_one();
  return work;
}

uint64_t CommThread::started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_ - 1;
}

void CommThread::wait_for_arrival(Collective& c, Watchdog& wd) {
  board_->publish(c.seq, c.sig);
  for (;;) {
    bool all = true;
    for (int r = 0; r < size_ && all; ++r) all = board_->entered(r) >= c.seq;
    if (all) break;
    wd.poll();
    wd.pause();
  }
  wd.set_all_arrived();
  // Everyone compares every signature with rank 0's, so every rank names the same
  // pair and raises the same message.
  const Signature first = board_->signature(0, c.seq);
  for (int r = 1; r < size_; ++r) {
    const Signature s = board_->signature(r, c.seq);
    if (!(s == first))
      throw DistError("collective #" + std::to_string(c.seq) + " differs between ranks: rank 0 called " +
                      describe(first) + " but rank " + std::to_string(r) + " called " + describe(s));
  }
}

void CommThread::loop() {
  for (;;) {
    Collective c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      c = std::move(queue_.front());
      queue_.pop_front();
    }
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken = failure_;
    }
    if (!broken.empty()) {
      c.work->finish(
          std::make_exception_ptr(DistError("process group is unusable after an earlier failure: " + broken)));
      continue;
    }
    try {
      Watchdog wd(c, rank_, size_, timeout(), board_.get());
      if (board_)
        wait_for_arrival(c, wd);
      else
        wd.set_all_arrived();  // nothing to wait for: transfer at once
      executor_(c, wd);
      c.work->finish(nullptr);
    } catch (const DistError& e) {
      g_failed = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        failure_ = e.what();
      }
      // MPI or NCCL may still write into these buffers: keep them alive for good.
      abandoned_.push_back(c.tensor);
      abandoned_.push_back(c.input);
      c.work->finish(std::current_exception());
    } catch (...) {
      // Not a communication failure (a tensor op on this thread raised): report it
      // to the caller; the ranks stay in step.
      c.work->finish(std::current_exception());
    }
  }
}

}  // namespace ember::dist
