// A transposing copy of 32-bit values (contiguous() of a transposed float32 or int32
// matrix) in whole 16 x 16 blocks, per instruction set: elementwise.cpp's
// copy_transposed hands the blocks to the active table's kernel when it has one, and
// walks its portable 32 x 32 tiles otherwise (and for the edges). Not part of the
// public API.
#pragma once

#include <cstdint>

namespace ember::cpu {
namespace transpose_detail {

// out[i * out_ld + j] = in[j * in_ld + i] for i < rows and j < cols, both multiples
// of 16 (leading dimensions in elements). stream: write with streaming stores, for
// outputs larger than the caches (out and out_ld must keep every 16-element row
// segment 64-byte aligned).
using Transpose32 = void (*)(const void* in, int64_t in_ld, void* out, int64_t out_ld, int64_t rows, int64_t cols,
                             bool stream);

struct TransposeKernels {
  const char* name;
  Transpose32 t32;  // nullptr: no block kernel at this level
};

// nullptr when this build cannot emit that instruction set.
const TransposeKernels* transpose_kernels_avx512();

}  // namespace transpose_detail

// The active instruction set's block kernel, or nullptr (isa.h).
transpose_detail::Transpose32 transpose32();

}  // namespace ember::cpu
