// The edit distance between a mistyped name and each known one; the nearest, when near enough.

#include "app/cli/did_you_mean.h"

#include <algorithm>

#include "show/text_layout.h"

namespace mha {

namespace {

// Edits (insert, delete, replace, swap two neighbours) that turn a into b.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                                d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
    const std::string typed = lowercase(word.substr(word.find_first_not_of('-') == std::string::npos
                                                        ? word.size()
                                                        : word.find_first_not_of('-')));
    // a typo: one edit in a short word, two in a longer one
    std::size_t best = typed.size() >= 6 ? 3 : typed.size() >= 3 ? 2 : 0;
    std::string nearest;
    for (const std::string& name : names) {
        const std::string bare = lowercase(name.substr(name.find_first_not_of('-')));
        const std::size_t distance = edit_distance(typed, bare);
        if (distance < best) {
            best = distance;
            nearest = name;
        }
    }
    return nearest.empty() ? "" : "; did you mean '" + nearest + "'?";
}

}  // namespace mha
