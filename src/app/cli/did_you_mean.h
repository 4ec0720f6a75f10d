#pragma once
// "Did you mean": the name nearest to a mistyped one, for options, subcommands and presets.

#include <string>
#include <vector>

namespace mha {

// "; did you mean 'NAME'?" for the name nearest to word (by edit distance, ignoring
// case) when it is near enough to be a typo, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace mha
