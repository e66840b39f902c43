// One collective as the communication thread runs it: its signature (what every
// rank must agree on: kind, dtype, element count, op or root, tag), its tensors and
// the Work handle that reports back. The signature is plain data because ranks on
// one host compare them through shared memory (arrival_board.h).
#pragma once

#include <cstdint>
#include <string>

#include "dist/process_group.h"

namespace ember::dist {

enum class CollectiveKind : int32_t { AllReduce, Broadcast, AllGather, Barrier };

const char* collective_name(CollectiveKind kind);  // "all_reduce", ...

struct Signature {
  int32_t kind = 0;   // CollectiveKind
  int32_t dtype = 0;  // DType
  int64_t numel = 0;  // of the input
  int32_t arg = 0;    // ReduceOp for all_reduce, root for broadcast
  int32_t unused = 0;
  int64_t tag = 0;
  bool operator==(const Signature&) const = default;
};

// "all_reduce(float32, 4 elements, sum, tag 0)", "broadcast(int64, 3 elements, root 0)", "barrier()".
std::string describe(const Signature& s);

struct Collective {
  Signature sig;
  uint64_t seq = 0;  // 1-based position in this group's sequence of collectives
  Tensor tensor;     // in/out (all_gather: the output)
  Tensor input;      // all_gather's input
  WorkPtr work;
  CollectiveKind kind() const { return static_cast<CollectiveKind>(sig.kind); }
  const char* name() const { return collective_name(kind()); }
};

}  // namespace ember::dist
