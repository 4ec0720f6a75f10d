#pragma once
// An 8 x 8 block of floats turned into its columns in registers, by three rounds of shuffles
// (the GNU vector extension's __builtin_shufflevector, which g++ 12 and clang++ 14 take).
// Always inlined: it is built for the CPU of the function that calls it.

#include <cstddef>
#include <cstring>

namespace mha {

typedef float Floats8 __attribute__((vector_size(8 * sizeof(float))));

// cols[j][r] = x[r * stride + j] for the 8 x 8 block at x.
inline __attribute__((always_inline)) void block_columns(const float* x, std::size_t stride,
                                                         Floats8 (&cols)[8]) {
    Floats8 rows[8], pairs[8], quads[8];
    for (std::size_t r = 0; r < 8; ++r) std::memcpy(&rows[r], x + r * stride, sizeof rows[r]);
    for (std::size_t r = 0; r < 8; r += 2) {  // rows r, r + 1 interleaved
        pairs[r] = __builtin_shufflevector(rows[r], rows[r + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        pairs[r + 1] = __builtin_shufflevector(rows[r], rows[r + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (std::size_t r = 0; r < 8; r += 4) {  // four rows' columns c and c + 4 in each
        for (std::size_t h = 0; h < 2; ++h) {
            quads[r + 2 * h] =
                __builtin_shufflevector(pairs[r + h], pairs[r + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            quads[r + 2 * h + 1] =
                __builtin_shufflevector(pairs[r + h], pairs[r + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    }
    for (std::size_t c = 0; c < 4; ++c) {
        cols[c] = __builtin_shufflevector(quads[c], quads[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        cols[c + 4] = __builtin_shufflevector(quads[c], quads[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

}  // namespace mha
