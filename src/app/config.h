#pragma once
// Config: everything the command line asked for, parsed and validated.

#include "core/attention.h"
#include "io/masks.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mha {

enum class Format { Text, Json };

struct Config {
    // Sizes left unset come from the files (when given) or the defaults below.
    std::optional<std::size_t> batch;    // B        default 2
    std::optional<std::size_t> seq_len;  // N        default 8
    std::optional<std::size_t> kv_len;   // M        default N (self-attention)
    std::optional<std::size_t> d_model;  //          default 256
    std::size_t heads = 4;               // h
    std::uint64_t seed = 0;
    std::size_t threads = 0;             // 0: the hardware's
    bool causal = false;
    bool bias = true;
    bool random_bias = false;
    bool trace = false;
    bool values = false;
    Format format = Format::Text;

    std::string weights_path, input_path, key_path, value_path;
    std::string mask_path, key_padding_mask_path, save_path;
    std::optional<MaskMeaning> mask_means;
    bool zero_masked_rows = false;
    std::optional<AttentionPath> attention;  // unset: auto, chosen in build_problem
    std::uint64_t max_memory = std::uint64_t(2) << 30;

    bool help = false;
    bool version = false;
};

inline constexpr std::size_t default_batch = 2;
inline constexpr std::size_t default_seq_len = 8;
inline constexpr std::size_t default_d_model = 256;
inline constexpr std::size_t max_threads = 256;

// Throws mha::Error when options contradict each other (e.g. --key without --value).
void validate(const Config& config);

}  // namespace mha
