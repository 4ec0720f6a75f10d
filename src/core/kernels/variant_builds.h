#pragma once
// Element-wise loops built once for each kernel variant's CPU, and the build the kernels in use
// take. A file writes its loop once, as an always-inlined template, defines BUILD(suffix,
// attribute) to make its `name_##suffix` functions of it, and writes MHA_FOR_EACH_VARIANT(BUILD);
// for_kernels_in_use then picks among the three builds. Off x86 the three are the same plain
// code, and only the baseline is picked.

#include "core/kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#define MHA_AVX2_TARGET __attribute__((target("avx2")))
#define MHA_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw")))
#else
#define MHA_AVX2_TARGET
#define MHA_AVX512_TARGET
#endif

#define MHA_FOR_EACH_VARIANT(BUILD) \
    BUILD(baseline, )               \
    BUILD(avx2, MHA_AVX2_TARGET)    \
    BUILD(avx512, MHA_AVX512_TARGET)

namespace mha {

// The build of the kernels in use among a file's three (the baseline for SSE2 and plain).
template <class Build>
Build for_kernels_in_use(Build baseline, Build avx2, Build avx512) {
    switch (kernel_variant()) {
        case KernelVariant::Avx512:
            return avx512;
        case KernelVariant::Avx2:
            return avx2;
        default:
            return baseline;
    }
}

}  // namespace mha
