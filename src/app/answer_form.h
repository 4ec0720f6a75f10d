#pragma once
// Reading a learner's typed answer the ways people write it: shapes as
// "2,4,8,64", "(2, 4, 8, 64)", "[2 4 8 64]", "2x4x8x64", "torch.Size([2, 4, 8, 64])"
// or "(B=2, h=4, N=8, d_k=64)"; counts as "263168", "263,168" or "263_168";
// byte counts also as "16 KiB" or "1.5 MiB".

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mha {

// A list of whole numbers, in order; "none" or "-" is the empty list. nullopt when
// anything else is in the text.
std::optional<std::vector<std::uint64_t>> parse_number_list(const std::string& text);

// One whole number, with optional thousands separators and an optional unit B,
// KiB, MiB or GiB (binary, as the trace prints bytes). nullopt when the text is
// not one number or names a fraction of a byte.
std::optional<std::uint64_t> parse_amount(const std::string& text);

}  // namespace mha
