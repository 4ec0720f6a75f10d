// Float blocks: the bytes they may hold (what the memory budget counts), zero-filled memory
// on both paths (2 MiB huge pages, and 4 KiB pages when the system gives no huge page), and
// tensors laid out in one block: views at offsets of one shared storage, like a weight set.

#include <catch2/catch.hpp>

#include "core/tensor/storage.h"
#include "core/tensor/tensor.h"
#include "io/init.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace test_storage {

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;

bool all_zero(const float* values, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        if (values[i] != 0.0f) return false;
    }
    return true;
}

#ifdef __linux__
// "Rss" or "AnonHugePages" of the mapping that holds `address`, in KiB, from /proc/self/smaps.
std::uint64_t smaps_kib(const void* address, const std::string& field) {
    const auto target = reinterpret_cast<std::uintptr_t>(address);
    std::ifstream smaps("/proc/self/smaps");
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-') {
            inside = begin <= target && target < end;
        } else if (inside && line.compare(0, field.size() + 1, field + ":") == 0) {
            return std::stoull(line.substr(field.size() + 1));
        }
    }
    FAIL("no mapping holds the block in /proc/self/smaps");
    return 0;
}

// What /sys says of transparent huge pages: "always", "madvise" or "never" (in brackets).
bool huge_pages_on_request() {
    std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(enabled, modes);
    return !modes.empty() && modes.find("[never]") == std::string::npos;
}
#endif

}  // namespace

TEST_CASE("block_bytes: whole 4 KiB pages, rounded up to 2 MiB past 512 KiB") {
    CHECK(mha::block_bytes(0) == 0);
    CHECK(mha::block_bytes(1) == 4 * KiB);
    CHECK(mha::block_bytes(1024) == 4 * KiB);  // 1024 floats = 4096 bytes, one page
    CHECK(mha::block_bytes(1025) == 8 * KiB);
    CHECK(mha::block_bytes(127 * 1024) == 508 * KiB);  // 508 KiB: below 512 KiB, 4 KiB pages
    CHECK(mha::block_bytes(128 * 1024) == 2 * MiB);    // 512 KiB: one huge page
    // the classic example's weight set: 4·256² + 4·256 = 263,168 floats = 1,052,672 bytes
    CHECK(mha::block_bytes(263168) == 2 * MiB);
    // 2 MiB + 400 bytes: one huge page and one 4 KiB page for the rest
    CHECK(mha::block_bytes(512 * 1024 + 100) == 2 * MiB + 4 * KiB);
    // 2 MiB + 1 MiB: the 1 MiB rest takes a second huge page
    CHECK(mha::block_bytes(768 * 1024) == 4 * MiB);
}

TEST_CASE("float_block gives zero-filled, writable floats of every size") {
    const std::size_t floats = GENERATE(std::size_t(2), std::size_t(1000), std::size_t(100000),
                                        std::size_t(263168), std::size_t(512 * 1024 + 100));
    INFO(floats << " floats");
    const std::shared_ptr<float> block = mha::float_block(floats);
    REQUIRE(block != nullptr);
    CHECK(all_zero(block.get(), floats));
    block.get()[0] = 1.0f;
    block.get()[floats - 1] = 2.0f;
    CHECK(block.get()[0] == 1.0f);
    CHECK(block.get()[floats - 1] == 2.0f);
#ifdef __linux__
    if (mha::block_bytes(floats) >= 2 * MiB) {  // a mapping of its own from a 2 MiB boundary
        CHECK(reinterpret_cast<std::uintptr_t>(block.get()) % (2 * MiB) == 0);
    }
#endif
}

#ifdef __linux__
TEST_CASE("a large block is on a huge page when the system gives one, else on 4 KiB pages") {
    const std::size_t floats = 263168;  // 1,052,672 bytes: 257 pages of 4 KiB
    SECTION("huge pages given") {
        if (!huge_pages_on_request()) {
            WARN("transparent huge pages are off here: only the 4 KiB path is tested");
            return;
        }
        const std::shared_ptr<float> block = mha::float_block(floats);
        CHECK(smaps_kib(block.get(), "AnonHugePages") == 2048);
        CHECK(all_zero(block.get(), floats));
    }
    SECTION("huge pages refused (PR_SET_THP_DISABLE): the floats' pages only") {
        REQUIRE(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0);
        const std::shared_ptr<float> block = mha::float_block(floats);
        const std::uint64_t huge = smaps_kib(block.get(), "AnonHugePages"),
                            resident = smaps_kib(block.get(), "Rss");
        REQUIRE(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) == 0);
        CHECK(huge == 0);
        CHECK(resident <= 257 * 4);  // populated: at most its own pages, none of the rounding
        CHECK(all_zero(block.get(), floats));
    }
}
#endif

TEST_CASE("tensors in one block: consecutive views of one storage, zero-filled") {
    std::vector<mha::Tensor> set = mha::Tensor::in_one_block({{2, 3}, {3}, {0}, {4, 2}});
    REQUIRE(set.size() == 4);
    CHECK(set[0].shape() == mha::Shape{2, 3});
    CHECK(set[3].strides() == mha::Strides{2, 1});
    CHECK(set[0].offset() == 0);
    CHECK(set[1].offset() == 6);
    CHECK(set[2].offset() == 9);
    CHECK(set[3].offset() == 9);
    CHECK(set[1].data() == set[0].data() + 6);
    for (const mha::Tensor& t : set) {
        CHECK_FALSE(t.empty());
        CHECK(t.shares_storage_with(set[0]));
        CHECK(t.is_contiguous());
        CHECK(all_zero(t.data(), t.numel()));
    }
    CHECK(set[2].numel() == 0);
    std::fill(set[1].data(), set[1].data() + 3, 5.0f);  // set[1] only: its neighbours keep 0
    CHECK(set[0].to_vector() == std::vector<float>(6, 0.0f));
    CHECK(set[3].to_vector() == std::vector<float>(8, 0.0f));
    CHECK(set[1].to_vector() == std::vector<float>(3, 5.0f));
    // views keep the storage; contiguous() of a contiguous block tensor is itself
    const mha::Tensor t = set[3].transpose(0, 1);
    CHECK(t.shares_storage_with(set[0]));
    CHECK(t.offset() == 9);
    CHECK(set[3].contiguous().data() == set[3].data());
    CHECK_FALSE(t.contiguous().shares_storage_with(set[0]));  // a copy
    // another block, or a tensor of its own, is another storage, even with no elements
    CHECK_FALSE(mha::Tensor::in_one_block({{2, 3}})[0].shares_storage_with(set[0]));
    CHECK_FALSE(mha::Tensor({0}).shares_storage_with(mha::Tensor({0})));
    CHECK_FALSE(mha::Tensor({0}).empty());
    CHECK(mha::Tensor().empty());
}

TEST_CASE("a seeded weight set is one block holding the draws in order", "[init]") {
    const mha::Weights w = mha::seeded_weights(16, true, true, 7);
    const mha::Tensor* set[] = {&w.w_q, &w.w_k, &w.w_v, &w.w_o, &w.b_q, &w.b_k, &w.b_v, &w.b_o};
    const float xavier = float(std::sqrt(6.0 / 32.0)), bias = float(1.0 / std::sqrt(16.0));
    const float bounds[] = {xavier, xavier, xavier, xavier, bias, bias, bias, bias};
    mha::Random random(7, 1);  // the weights' stream, drawn one at a time
    for (std::size_t i = 0; i < 8; ++i) {
        INFO("tensor " << i);
        CHECK(set[i]->shares_storage_with(w.w_q));
        std::vector<float> expected(set[i]->numel());
        random.uniform(-bounds[i], bounds[i], expected.data(), expected.size());
        CHECK(set[i]->to_vector() == expected);
    }
    const mha::Weights zero_bias = mha::seeded_weights(16, true, false, 7);
    CHECK(zero_bias.b_o.to_vector() == std::vector<float>(16, 0.0f));
    CHECK(zero_bias.w_o.to_vector() == w.w_o.to_vector());
}

}  // namespace test_storage
