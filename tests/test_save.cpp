// --save: concurrent runs to one path, and a temporary name that nothing in the folder blocks.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "helpers.h"
#include "io/atomic_file.h"
#include "io/npy.h"

namespace fs = std::filesystem;

TEST_CASE("concurrent --save runs to the same path all succeed and leave one whole file") {
    const fs::path dir = test::temp_path("save-concurrent");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = (dir / "out.npz").string();
    std::string script;
    for (int run = 0; run < 6; ++run) {
        const std::string status = (dir / ("status" + std::to_string(run))).string();
        script += "(" + test::mha_binary() + " -n 24 -d 64 --seed " + std::to_string(run) +
                  " --save " + out + " >/dev/null; echo $? > " + status + ") & ";
    }
    REQUIRE(test::run_command(script + "wait").status == 0);
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        ++files;
        const std::string name = entry.path().filename().string();
        if (name.rfind("status", 0) == 0) {
            INFO(name);
            CHECK(test::run_command("cat " + entry.path().string()).output == "0\n");
        }
    }
    CHECK(files == 7);  // out.npz and six status files: no temporary file left
    const auto arrays = mha::npy::read_npz(out);
    CHECK(arrays.at("output").shape == mha::Shape{2, 24, 64});
    CHECK(arrays.at("attn_weights").shape == mha::Shape{2, 4, 24, 24});
    fs::remove_all(dir);
}

TEST_CASE("write_npz does not depend on a fixed temporary name being free") {
    const fs::path dir = test::temp_path("save-tmp-name");
    fs::remove_all(dir);
    fs::create_directories(dir / "out.npz.tmp");  // blocked the fixed name the writer once used
    const std::string out = (dir / "out.npz").string();
    mha::check_writable(out);
    mha::npy::write_npz(out, {{"x", mha::Tensor(mha::Shape{2}, {1.5f, -2.0f})}});
    CHECK(mha::npy::read_npz(out).at("x").values == std::vector<double>{1.5, -2.0});
    fs::remove_all(dir);
}
