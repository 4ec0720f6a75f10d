// libFuzzer target: arbitrary bytes as a command line (arguments split at newlines) parsed
// into a Config; without files, the problem is then set up under a 1 MiB memory budget.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/problem.h"
#include "core/error.h"

namespace {

bool names_a_file(const mha::Config& c) {
    return !(c.weights_path.empty() && c.input_path.empty() && c.key_path.empty() &&
             c.value_path.empty() && c.mask_path.empty() && c.key_padding_mask_path.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args;
    std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
    for (std::string arg; std::getline(lines, arg);) args.push_back(arg);
    try {
        mha::Config config = mha::parse_args(args);
        if (names_a_file(config)) return 0;
        config.max_memory = std::min<std::uint64_t>(config.max_memory, 1 << 20);
        mha::build_problem(config);
    } catch (const mha::Error&) {
    }
    return 0;
}
