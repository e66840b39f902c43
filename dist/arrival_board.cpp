// The arrival board (see arrival_board.h). Each slot is written only by its own
// rank: the signature first, then the sequence number with release order, so a
// reader that sees the number (acquire) sees the signature. A rank can be at most
// one collective ahead of the slowest (it waits for everyone at each one), so a
// small ring of signatures per slot is enough.
#include "dist/arrival_board.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "kernels/base/error.h"

namespace ember::dist {

namespace {
constexpr int kRing = 8;
}

struct alignas(64) ArrivalBoard::Slot {
  int64_t pid;
  uint64_t seq;
  Signature ring[kRing];
};

ArrivalBoard::ArrivalBoard(const std::string& name, int size, int rank, bool create) : name_(name), rank_(rank) {
  bytes_ = sizeof(Slot) * static_cast<size_t>(size);
  const int fd = shm_open(name.c_str(), create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
  if (fd < 0) throw DistError("init_process_group: cannot open shared memory " + name + ": " + std::strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    const int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    throw DistError("init_process_group: cannot size shared memory " + name + ": " + std::strerror(e));
  }
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw DistError("init_process_group: cannot map shared memory " + name + ": " + std::strerror(errno));
  }
  // A fresh mapping reads as zeros; only this rank writes its slot.
  __atomic_store_n(&slot(rank)->pid, static_cast<int64_t>(getpid()), __ATOMIC_RELEASE);
}

ArrivalBoard::~ArrivalBoard() {
  if (base_) munmap(base_, bytes_);
}

void ArrivalBoard::unlink() { shm_unlink(name_.c_str()); }

ArrivalBoard::Slot* ArrivalBoard::slot(int r) const { return static_cast<Slot*>(base_) + r; }

void ArrivalBoard::publish(uint64_t seq, const Signature& sig) {
  // Our own slot: no other process writes it, and readers look at ring[seq % kRing]
  // only after they see `seq`, which is stored last.
  Slot* s = slot(rank_);
  std::memcpy(&s->ring[seq % kRing], &sig, sizeof sig);
  __atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
}

uint64_t ArrivalBoard::entered(int r) const { return __atomic_load_n(&slot(r)->seq, __ATOMIC_ACQUIRE); }

Signature ArrivalBoard::signature(int r, uint64_t seq) const {
  Signature out;
  std::memcpy(&out, &slot(r)->ring[seq % kRing], sizeof out);
  return out;
}

int64_t ArrivalBoard::pid(int r) const { return __atomic_load_n(&slot(r)->pid, __ATOMIC_ACQUIRE); }

bool ArrivalBoard::alive(int r) const {
  const int64_t p = pid(r);
  if (p <= 0) return true;  // not mapped yet: nothing to say
  if (kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH) return false;
  // An exited process stays a zombie until its parent (the MPI daemon) reaps it.
  std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= line.size()) return true;
  const char state = line[close_paren + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace ember::dist
