// Every form of the pass under every view: each combination either runs (exit 0) or is refused
// before any output with one line and exit 2. Nothing ever crashes, and nothing is printed
// before a refusal.

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"

namespace test_matrix {

namespace {

struct Case {
    const char* name;
    std::string args;
};

// The forms, small enough that every view is quick: B=1, N=4, d_model=16, h=4.
const std::vector<Case>& forms() {
    static const std::vector<Case> list = {
        {"packed", "-b 1 -n 4 -d 16 -H 4"},
        {"fused QKV", "-b 1 -n 4 -d 16 -H 4 --fused-qkv"},
        {"per-head", "-b 1 -n 4 -d 16 -H 4 --per-head"},
        {"GQA", "-b 1 -n 4 -d 16 -H 4 -G 2"},
        {"cross-attention", "-b 2 -n 3 -m 5 -d 16 -H 4"},
        {"appended keys", "-b 1 -n 4 -d 16 -H 4 --add-zero-attn"},
        {"decode", "-b 1 -d 16 -H 4 --decode 4"},
        {"block pre", "-b 1 -n 4 -d 16 -H 4 --block pre"},
        {"block post", "-b 1 -n 4 -d 16 -H 4 --block post"},
        {"MLA", "-b 1 -n 4 -d 16 -H 4 --form mla"},
        {"streaming", "-b 1 -n 4 -d 16 -H 4 --attention streaming"},
        {"wider heads", "-b 1 -n 4 -d 16 -H 4 --head-dim 8"},
        {"narrower heads", "-b 1 -n 4 -d 16 -H 4 --head-dim 2"},
        {"modern",
         "-b 1 -n 4 -d 16 -H 4 --rope half --qk-norm --softcap 30 --window 3 "
         "--sink-tokens 1"},
        {"ALiBi", "-b 1 -n 4 -d 16 -H 4 --alibi --causal"},
        {"model", "--model ../examples/models/kjv-2x4.npz --text 'in the beginning'"},
    };
    return list;
}

// The views; FILE is replaced by a temporary path.
const std::vector<Case>& views() {
    static const std::vector<Case> list = {
        {"plain", ""},
        {"trace", "--trace"},
        {"values", "--values"},
        {"heatmap", "--heatmap --color never"},
        {"summary", "--summary"},
        {"head contributions", "--head-contributions"},
        {"ablate", "--ablate-head 1"},
        {"SVG", "--export-svg FILE.svg"},
        {"JSON", "--format json"},
        {"Markdown", "--format markdown"},
        {"HTML", "--format html --output FILE.html"},
        {"save", "--save FILE.npz"},
        {"shapes-only", "--shapes-only --trace"},
        {"no-scale", "--no-scale"},
        {"explain", "--trace --explain"},
        {"flash-row", "--attention streaming --flash-row 1"},
        {"threads", "--threads 3"},
        {"causal", "--causal"},
    };
    return list;
}

std::string with_files(std::string args, const std::string& file) {
    for (std::size_t at = args.find("FILE"); at != std::string::npos; at = args.find("FILE"))
        args.replace(at, 4, file);
    return args;
}

}  // namespace

TEST_CASE("every form under every view runs, or is refused up front in one line", "[cli]") {
    const std::string file = test::temp_path("matrix");
    for (const Case& form : forms()) {
        for (const Case& view : views()) {
            const std::string args = form.args + " " + with_files(view.args, file);
            CAPTURE(form.name, view.name, args);
            const test::RunResult r = test::run_mha(args + " < /dev/null");
            CHECK((r.status == 0 || r.status == 2));
            if (r.status == 2) {
                CHECK_THAT(r.output, Catch::StartsWith("mha: error: "));
                CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
            } else {
                CHECK(r.output.find("mha: error:") == std::string::npos);
            }
        }
    }
    for (const char* ext : {".svg", ".html", ".npz"}) std::remove((file + ext).c_str());
}

}  // namespace test_matrix
