// What grouped-query attention shares, written out for the trace.

#include "core/kv_heads.h"

#include <cstdint>

namespace mha {

namespace {

std::string head_range(std::size_t first, std::size_t last) {
    return first == last ? "query head " + std::to_string(first)
                         : "query heads " + std::to_string(first) + "-" + std::to_string(last);
}

// Exact: the largest of B, KiB, MiB ... in which the amount is a whole number.
std::string bytes_text(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    while (bytes >= 1024 && bytes % 1024 == 0 && unit + 1 < sizeof units / sizeof units[0]) {
        bytes /= 1024;
        ++unit;
    }
    return std::to_string(bytes) + " " + units[unit];
}

std::string cost_of(const char* label, std::size_t g, const Sizes& s) {
    const std::uint64_t E = s.d_model, width = std::uint64_t(g) * (E / s.heads);  // G·d_k
    const std::uint64_t weights = 2 * E * E + width * (s.kdim + s.vdim);
    const std::uint64_t per_token = 2 * width * sizeof(float);  // one K row and one V row
    return std::string(label) + " G=" + std::to_string(g) +
           (g == s.kv_heads ? " (this run)" : "") + ": " + std::to_string(weights) +
           " weights; cache " + bytes_text(per_token) + "/token, " +
           bytes_text(per_token * s.kv_len) + "/sequence of M=" + std::to_string(s.kv_len);
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

std::vector<std::string> kv_cost_notes(const Sizes& s) {
    std::vector<std::string> notes = {
        "projection weights (no biases) and K/V cache per layer and batch row, float32:",
        cost_of("MHA", s.heads, s)};
    if (s.kv_heads != s.heads && s.kv_heads != 1) notes.push_back(cost_of("GQA", s.kv_heads, s));
    if (s.heads != 1) notes.push_back(cost_of("MQA", 1, s));
    return notes;
}

}  // namespace mha
