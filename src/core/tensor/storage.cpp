// Float blocks mapped in by one system call: on huge pages when large, else page by page.

#include "core/tensor/storage.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <utility>

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace mha {

namespace {

std::atomic<std::uint64_t> handed_out{0};  // tensor_bytes_handed_out

constexpr std::uint64_t page = 4096;
constexpr std::uint64_t huge_page = std::uint64_t(2) << 20;
// Here (a virtual machine) MADV_POPULATE_WRITE maps a 4 KiB page in about 4.3 µs and one
// 2 MiB huge page in about 0.44 ms: a huge page pays from about 100 pages on.
constexpr std::uint64_t huge_page_worth_it = std::uint64_t(512) << 10;

std::uint64_t round_up(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

// Maps in the whole pages inside [begin, begin + bytes) before anything is written there:
// one system call instead of one page fault per page (10 µs or more each on a virtual
// machine). A kernel before 5.14 refuses it, and the pages fault in as they are written.
void populate([[maybe_unused]] void* begin, [[maybe_unused]] std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    const auto start = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t first = round_up(start, page), end = (start + bytes) / page * page;
    if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE);
#endif
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
// A mapping of its own, `bytes` long (a multiple of 4 KiB) from a 2 MiB boundary, advised
// for huge pages; only the floats' pages are mapped in, so without huge pages it holds no
// more than they need.
std::shared_ptr<float> mapped_block(std::size_t floats, std::size_t bytes) {
    const std::size_t slack = huge_page - page;  // room to move the start to a 2 MiB boundary
    void* raw =
        mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    count_tensor_bytes(bytes);
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = round_up(start, huge_page), end = start + bytes + slack;
    if (aligned > start) munmap(raw, aligned - start);
    if (end > aligned + bytes)
        munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
    auto* first = reinterpret_cast<float*>(aligned);
    madvise(first, bytes, MADV_HUGEPAGE);  // refused or ignored without huge pages: 4 KiB pages
    populate(first, floats * sizeof(float));
    return std::shared_ptr<float>(first, [bytes](float* p) { munmap(p, bytes); });
}
#endif

// Asks glibc's malloc, once, to keep freed memory for the next request: by default a block
// of 128 KiB or more is a mapping of its own, unmapped when freed, and the heap's free top is
// given back, so every step of a training run would fault its tensors' pages in anew, one
// 4 KiB page at a time and on the calling thread alone (page faults were a tenth of a
// one-thread training step). A vector that reuses freed memory is filled instead.
void keep_freed_memory() {
#ifdef __GLIBC__
    static const bool kept = [] {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest glibc takes: 32 MiB
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        return true;
    }();
    static_cast<void>(kept);
#endif
}

}  // namespace

std::uint64_t tensor_bytes_handed_out() { return handed_out.load(std::memory_order_relaxed); }

void count_tensor_bytes(std::uint64_t bytes) {
    handed_out.fetch_add(bytes, std::memory_order_relaxed);
}

std::vector<float> reserved_floats(std::size_t n) {
    keep_freed_memory();
    count_tensor_bytes(std::uint64_t(n) * sizeof(float));
    std::vector<float> values;
    values.reserve(n);
    if (n * sizeof(float) >= 16 * page) populate(values.data(), n * sizeof(float));
    return values;
}

std::uint64_t block_bytes(std::uint64_t floats) {
    if (floats > (std::numeric_limits<std::uint64_t>::max() - huge_page) / sizeof(float)) {
        return std::numeric_limits<std::uint64_t>::max();
    }
    const std::uint64_t bytes = round_up(floats * sizeof(float), page);
    return bytes % huge_page >= huge_page_worth_it ? round_up(bytes, huge_page) : bytes;
}

std::shared_ptr<float> zeroed_floats(std::size_t floats) {
    auto values = std::make_shared<std::vector<float>>(reserved_floats(floats));
    values->resize(floats, 0.0f);
    return std::shared_ptr<float>(values, values->data());
}

std::shared_ptr<float> float_block(std::size_t floats) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const std::uint64_t bytes = block_bytes(floats);
    if (bytes >= huge_page) return mapped_block(floats, std::size_t(bytes));
#endif
    return zeroed_floats(floats);
}

}  // namespace mha
