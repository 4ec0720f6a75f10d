// NFC: canonical decomposition, canonical ordering, canonical composition (Unicode's UAX #15).
#include "tokenize/nfc.h"

#include <algorithm>

namespace mha::unicode {

namespace {

// Hangul syllables are composed of jamo by arithmetic (Unicode's chapter 3.12).
constexpr std::uint32_t hangul_first = 0xAC00, hangul_count = 11172;
constexpr std::uint32_t lead_first = 0x1100, vowel_first = 0x1161, trail_first = 0x11A7;
constexpr std::uint32_t vowel_count = 21, trail_count = 28;

bool is_hangul(std::uint32_t code) {
    return code >= hangul_first && code < hangul_first + hangul_count;
}

const Decomposition* find_decomposition(std::uint32_t code) {
    const Decomposition* end = decompositions + decomposition_count;
    const Decomposition* found =
        std::lower_bound(decompositions, end, code,
                         [](const Decomposition& d, std::uint32_t c) { return d.code < c; });
    return found != end && found->code == code ? found : nullptr;
}

// Appends the full canonical decomposition of code, each part remembering source.
void decompose(std::uint32_t code, std::size_t source, Composed& out) {
    if (is_hangul(code)) {
        const std::uint32_t index = code - hangul_first;
        out.codes.push_back(lead_first + index / (vowel_count * trail_count));
        out.codes.push_back(vowel_first + index % (vowel_count * trail_count) / trail_count);
        const std::size_t parts = index % trail_count ? 3 : 2;
        if (parts == 3) out.codes.push_back(trail_first + index % trail_count);
        out.sources.insert(out.sources.end(), parts, source);
        return;
    }
    const Decomposition* step = find_decomposition(code);
    if (!step) {
        out.codes.push_back(code);
        out.sources.push_back(source);
        return;
    }
    decompose(step->first, source, out);
    if (step->second) decompose(step->second, source, out);
}

// Sorts each run of non-starters by combining class, stably.
void order_marks(Composed& text) {
    std::vector<std::size_t> order;
    for (std::size_t start = 0; start < text.codes.size();) {
        std::size_t end = start;
        while (end < text.codes.size() && combining_class(text.codes[end]) != 0) ++end;
        if (end - start > 1) {
            order.resize(end - start);
            for (std::size_t i = 0; i < order.size(); ++i) order[i] = start + i;
            std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                return combining_class(text.codes[a]) < combining_class(text.codes[b]);
            });
            Composed run;
            for (std::size_t i : order) {
                run.codes.push_back(text.codes[i]);
                run.sources.push_back(text.sources[i]);
            }
            std::copy(run.codes.begin(), run.codes.end(), text.codes.begin() + start);
            std::copy(run.sources.begin(), run.sources.end(), text.sources.begin() + start);
        }
        start = end + 1;
    }
}

bool excluded_from_composition(std::uint32_t code) {
    const CodeRange* end = composition_exclusions + composition_exclusion_count;
    const CodeRange* found =
        std::lower_bound(composition_exclusions, end, code,
                         [](const CodeRange& r, std::uint32_t c) { return r.last < c; });
    return found != end && found->first <= code;
}

// A primary composite: first + second -> composite.
struct Composition {
    std::uint32_t first, second, composite;
};

// The primary composites, sorted by (first, second): each decomposition of a starter into two
// starters, read backwards, but the exclusions (UAX #15's Full_Composition_Exclusion: these,
// the singletons and the non-starter decompositions).
const std::vector<Composition>& compositions() {
    static const std::vector<Composition> table = [] {
        std::vector<Composition> out;
        for (std::size_t i = 0; i < decomposition_count; ++i) {
            const Decomposition& d = decompositions[i];
            if (d.second && combining_class(d.code) == 0 && combining_class(d.first) == 0 &&
                !excluded_from_composition(d.code))
                out.push_back({d.first, d.second, d.code});
        }
        std::sort(out.begin(), out.end(), [](const Composition& a, const Composition& b) {
            return std::make_pair(a.first, a.second) < std::make_pair(b.first, b.second);
        });
        return out;
    }();
    return table;
}

// The primary composite of first + second, or 0.
std::uint32_t compose_pair(std::uint32_t first, std::uint32_t second) {
    if (first >= lead_first && first < lead_first + 19 && second >= vowel_first &&
        second < vowel_first + vowel_count)
        return hangul_first +
               ((first - lead_first) * vowel_count + second - vowel_first) * trail_count;
    if (is_hangul(first) && (first - hangul_first) % trail_count == 0 && second > trail_first &&
        second < trail_first + trail_count)
        return first + second - trail_first;
    const std::vector<Composition>& table = compositions();
    const auto found = std::lower_bound(
        table.begin(), table.end(), std::make_pair(first, second),
        [](const Composition& c, const std::pair<std::uint32_t, std::uint32_t>& key) {
            return std::make_pair(c.first, c.second) < key;
        });
    return found != table.end() && found->first == first && found->second == second
               ? found->composite
               : 0;
}

// Composes each character with the last starter before it unless a mark between blocks it.
Composed compose(const Composed& text) {
    Composed out;
    std::size_t starter = 0;
    bool have_starter = false;
    int last_class = -1;  // the class of the last code point kept after the starter
    for (std::size_t i = 0; i < text.codes.size(); ++i) {
        const std::uint32_t code = text.codes[i];
        const int cls = combining_class(code);
        if (have_starter) {
            const bool blocked = last_class != -1 && (last_class == 0 || last_class >= cls);
            const std::uint32_t composite = blocked ? 0 : compose_pair(out.codes[starter], code);
            if (composite) {
                out.codes[starter] = composite;
                continue;
            }
        }
        if (cls == 0) {
            starter = out.codes.size();
            have_starter = true;
            last_class = -1;
        } else {
            last_class = cls;
        }
        out.codes.push_back(code);
        out.sources.push_back(text.sources[i]);
    }
    return out;
}

}  // namespace

std::uint8_t combining_class(std::uint32_t code) {
    const CombiningRange* end = combining_ranges + combining_range_count;
    const CombiningRange* found =
        std::upper_bound(combining_ranges, end, code,
                         [](std::uint32_t c, const CombiningRange& r) { return c < r.first; });
    if (found == combining_ranges) return 0;
    --found;
    return code <= found->last ? found->combining_class : 0;
}

Composed nfc(const std::vector<std::uint32_t>& codes) {
    Composed decomposed;
    for (std::size_t i = 0; i < codes.size(); ++i) decompose(codes[i], i, decomposed);
    order_marks(decomposed);
    return compose(decomposed);
}

}  // namespace mha::unicode
