// What grouped-query attention shares, written out for the trace.

#include "core/kv_heads.h"

#include <cstdint>

namespace mha {

namespace {

std::string head_range(std::size_t first, std::size_t last) {
    return first == last ? "query head " + std::to_string(first)
                         : "query heads " + std::to_string(first) + "-" + std::to_string(last);
}

// Whole bytes, KiB, MiB ...: the largest unit that leaves at least 10 of them.
std::string bytes_text(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    std::uint64_t whole = bytes;
    while (whole >= 1024 * 10 && unit + 1 < sizeof units / sizeof units[0]) {
        whole /= 1024;
        ++unit;
    }
    return std::to_string(whole) + " " + units[unit];
}

// in_features: kdim + vdim, the columns of W_k and W_v together.
std::string cost_of(const char* label, std::size_t g, bool this_run, std::size_t d_k,
                    std::size_t in_features, std::size_t kv_len) {
    const std::uint64_t width = std::uint64_t(g) * d_k;         // G·d_k rows of W_k (and of W_v)
    const std::uint64_t per_token = 2 * width * sizeof(float);  // one K row and one V row
    return std::string(label) + " G=" + std::to_string(g) + (this_run ? " (this run)" : "") +
           ": W_k+W_v " + std::to_string(width * in_features) + " weights, cache " +
           bytes_text(per_token) + "/token, " + bytes_text(per_token * kv_len) +
           "/sequence of M=" + std::to_string(kv_len);
}

}  // namespace

std::vector<std::string> kv_sharing_notes(std::size_t heads, std::size_t kv_heads) {
    const std::size_t group = heads / kv_heads;
    std::vector<std::string> notes;
    for (std::size_t g = 0; g < kv_heads; ++g) {
        notes.push_back(head_range(g * group, g * group + group - 1) + " read K/V head " +
                        std::to_string(g));
    }
    return notes;
}

std::string kv_repeat_note(std::size_t heads, std::size_t kv_heads) {
    return "query head i reads K/V head i / " + std::to_string(heads / kv_heads) +
           ": what K.repeat_interleave(" + std::to_string(heads / kv_heads) +
           ", dim=1) computes, without copying K or V";
}

std::vector<std::string> kv_cost_notes(std::size_t heads, std::size_t kv_heads, std::size_t d_k,
                                       std::size_t in_features, std::size_t kv_len) {
    std::vector<std::string> notes = {
        "K/V sharing per layer and batch row, float32:",
        cost_of("MHA", heads, kv_heads == heads, d_k, in_features, kv_len)};
    if (kv_heads != heads && kv_heads != 1)
        notes.push_back(cost_of("GQA", kv_heads, true, d_k, in_features, kv_len));
    if (heads != 1) notes.push_back(cost_of("MQA", 1, kv_heads == 1, d_k, in_features, kv_len));
    return notes;
}

}  // namespace mha
