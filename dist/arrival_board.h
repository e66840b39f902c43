// The arrival board: a page of shared memory, one slot per rank, where each rank
// posts the number and signature of the collective it is entering, and its pid.
// It lets every rank on one host see, without asking MPI, which peers have called
// the current collective, whether they called the same one, and whether a peer's
// process has died, so a failure becomes a DistError naming the rank instead of a
// hang. Ranks on several hosts get no board (the deadline still holds).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dist/collective.h"

namespace ember::dist {

class ArrivalBoard {
 public:
  // Maps the board named `name` (a POSIX shared-memory name), creating it when
  // `create` is set. Raises DistError when the system refuses.
  ArrivalBoard(const std::string& name, int size, int rank, bool create);
  ~ArrivalBoard();
  ArrivalBoard(const ArrivalBoard&) = delete;
  ArrivalBoard& operator=(const ArrivalBoard&) = delete;

  // Removes the name (the mapping stays): called once every rank has mapped it, so
  // nothing is left in /dev/shm even if the job is killed.
  void unlink();

  // This rank is entering collective `seq` with signature `sig`.
  void publish(uint64_t seq, const Signature& sig);
  // The last collective rank r entered (0: none yet).
  uint64_t entered(int r) const;
  // Rank r's signature for collective `seq`; valid while entered(r) is seq or seq + 1.
  Signature signature(int r, uint64_t seq) const;
  // False once rank r's process has exited (checked through /proc; its pid was
  // posted when the board was mapped).
  bool alive(int r) const;
  int64_t pid(int r) const;

 private:
  struct Slot;
  Slot* slot(int r) const;
  std::string name_;
  int rank_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ember::dist
