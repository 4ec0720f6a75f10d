#pragma once
// Unicode's canonical composition (NFC, Unicode 15.0) on code points: decompose canonically,
// order the combining marks, compose the primary composites; from tables generated once from
// Debian's unicode-data package (make_nfc_table.py beside this file), the composites read
// backwards from the decompositions, Hangul computed.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mha::unicode {

// Code points [first, last] of one non-zero canonical combining class.
struct CombiningRange {
    std::uint32_t first, last;
    std::uint8_t combining_class;
};

// One step of a canonical decomposition: code -> first (second), second 0 for a singleton.
struct Decomposition {
    std::uint32_t code, first, second;
};

// Code points [first, last].
struct CodeRange {
    std::uint32_t first, last;
};

// The generated tables (nfc_table.cpp), each sorted by its first fields. The exclusions are
// the code points whose decomposition into two starters is not composed back (Unicode's
// CompositionExclusions.txt).
extern const CombiningRange combining_ranges[];
extern const std::size_t combining_range_count;
extern const Decomposition decompositions[];
extern const std::size_t decomposition_count;
extern const CodeRange composition_exclusions[];
extern const std::size_t composition_exclusion_count;

std::uint8_t combining_class(std::uint32_t code);

// A run of code points in NFC, and for each output code point the index of the first input code
// point it came from (a composite keeps its starter's).
struct Composed {
    std::vector<std::uint32_t> codes;
    std::vector<std::size_t> sources;
};
Composed nfc(const std::vector<std::uint32_t>& codes);

}  // namespace mha::unicode
