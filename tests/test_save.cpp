// --save: concurrent runs to one path, a temporary name that nothing in the folder blocks,
// and no temporary file left when SIGINT or SIGTERM stops a write (--save, --export-svg).

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "helpers.h"
#include "io/atomic_file.h"
#include "io/npy.h"

namespace test_save {

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

namespace {

// Whether `dir` holds a temporary file ("*.tmp") with data in it: a write under way.
bool writing_in(const fs::path& dir) {
    std::error_code error;
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
            fs::file_size(it->path(), error) > 0 && !error) {
            return true;
        }
    }
    return false;
}

// Runs mha with `args` and sends `signal_number` as soon as a temporary file in `dir` holds
// data; returns the wait status, and in `caught` whether the signal went out while writing
// (false: the run ended first).
int interrupt_while_writing(const std::string& args, const fs::path& dir, int signal_number,
                            bool& caught) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const std::string command = "exec " + test::mha_binary() + " " + args + " >/dev/null 2>&1";
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    caught = false;
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
        if (writing_in(dir)) {
            caught = kill(child, signal_number) == 0;
            REQUIRE(waitpid(child, &status, 0) == child);
            break;
        }
        usleep(200);
    }
    return status;
}

}  // namespace

TEST_CASE("SIGINT or SIGTERM while --save or --export-svg writes leaves no temporary file") {
    const int signal_number = GENERATE(SIGINT, SIGTERM);
    // --save: the weights alone are B·h·N·N floats (16 MiB and up); the SVG about 130 bytes
    // per weight drawn (h·N² of them, 32 MiB and up)
    const bool svg = GENERATE(false, true);
    const fs::path dir = test::temp_path("save-signal");
    CAPTURE(signal_number, svg);
    bool caught = false;
    for (std::size_t n = svg ? 256 : 1024; !caught && n <= (svg ? 512u : 4096u); n *= 2) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        const std::string args =
            svg ? "-b 1 -n " + std::to_string(n) + " --export-svg " + (dir / "out.svg").string()
                : "-b 1 -n " + std::to_string(n) + " --save " + (dir / "out.npz").string();
        CAPTURE(args);
        const int status = interrupt_while_writing(args, dir, signal_number, caught);
        if (!caught) continue;  // the write ended before the poll saw it: try a larger one
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == signal_number);
        CHECK(fs::is_empty(dir));  // neither the temporary file nor a partial output
    }
    CHECK(caught);
    fs::remove_all(dir);
}

TEST_CASE("every writer writes through a symbolic link: the link stays, its target is updated") {
    const fs::path dir = test::temp_path("save-link");
    fs::remove_all(dir);
    fs::create_directories(dir / "real");
    const std::string option =
        GENERATE(as<std::string>{}, "--save", "--export-svg", "--format html --output");
    CAPTURE(option);
    const std::string out = option == "--export-svg" ? "out.svg" : "out";  // its name says SVG
    fs::create_symlink("real/target", dir / out);  // relative: read from the link's folder
    std::ofstream(dir / "real" / "target") << "old";
    fs::permissions(dir / "real" / "target", fs::perms(0640));
    const test::RunResult r =
        test::run_mha("-n 3 -d 8 -H 2 " + option + " " + (dir / out).string());
    REQUIRE(r.status == 0);
    CHECK(fs::is_symlink(fs::symlink_status(dir / out)));
    CHECK(fs::read_symlink(dir / out) == "real/target");
    const std::string written = test::read_text((dir / "real" / "target").string());
    CHECK(written.size() > 3);  // not "old"
    CHECK(fs::status(dir / "real" / "target").permissions() == fs::perms(0640));
    std::size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        files += entry.is_regular_file() && !entry.is_symlink();
    CHECK(files == 1);  // no temporary file left beside the link or the target
    fs::remove_all(dir);
}

TEST_CASE("a dangling link is written through: its target is created") {
    const fs::path dir = test::temp_path("save-dangling");
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::create_symlink(dir / "new.npz", dir / "link.npz");
    REQUIRE(test::run_mha("-n 3 -d 8 -H 2 --save " + (dir / "link.npz").string()).status == 0);
    CHECK(fs::is_symlink(fs::symlink_status(dir / "link.npz")));
    CHECK(mha::npy::read_npz((dir / "new.npz").string()).count("output") == 1);
    fs::remove_all(dir);
}

TEST_CASE("a FIFO, a device, a standard stream and a link loop are refused at once, in one line",
          "[catalogue]") {
    const fs::path dir = test::temp_path("save-special");
    fs::remove_all(dir);
    fs::create_directories(dir);
    REQUIRE(mkfifo((dir / "pipe").c_str(), 0600) == 0);
    fs::create_symlink("/dev/null", dir / "null-link");
    fs::create_symlink(dir / "loop-b", dir / "loop-a");
    fs::create_symlink(dir / "loop-a", dir / "loop-b");
    const std::string option =
        GENERATE(as<std::string>{}, "--save", "--export-svg", "--format html --output");
    const std::string d = dir.string();
    // each would hang (a FIFO no one reads) or replace a file the system owns
    test::check_rejected(option + " " + d + "/pipe",
                         d + "/pipe: it is a named pipe (FIFO); expected a regular file or a new "
                             "file name");
    test::check_rejected(option + " /dev/null",
                         "cannot write /dev/null: it is a character device; expected a regular "
                         "file or a new file name");
    test::check_rejected(option + " " + d + "/null-link",
                         d + "/null-link (a link to /dev/null): it is a character device");
    for (const std::string stream : {"/dev/stdout", "/dev/stderr", "/dev/fd/1"}) {
        test::check_rejected(option + " " + stream, "cannot write " + stream +
                                                        ": it names a standard stream or an open "
                                                        "descriptor, not a file");
    }
    test::check_rejected(option + " " + d + "/loop-a", "symbolic links to follow (a loop?)");
    CHECK(fs::is_fifo(dir / "pipe"));
    fs::remove_all(dir);
}

TEST_CASE(
    "a write that fails (a file size limit, SIGXFSZ not ignored by the shell) leaves no "
    "temporary file") {
    const fs::path dir = test::temp_path("save-xfsz");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string option = GENERATE(as<std::string>{}, "--save", "--export-svg");
    const std::string out = option == "--export-svg" ? "out.svg" : "out";  // its name says SVG
    const test::RunResult r =
        test::run_command("ulimit -f 1; " + test::mha_binary() + " -n 64 -d 64 " + option + " " +
                          (dir / out).string() + " 2>&1 >/dev/null");
    CHECK(r.status == 2);
    CHECK(r.output == "mha: error: cannot write " + (dir / out).string() + ": File too large\n");
    CHECK(fs::is_empty(dir));
    fs::remove_all(dir);
}

TEST_CASE("a run whose standard output fails writes no --save or --export-svg file") {
    const fs::path dir = test::temp_path("save-full");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string files =
        " --save " + (dir / "out.npz").string() + " --export-svg " + (dir / "out.svg").string();
    const std::string model = "--model ../examples/models/kjv-2x4.npz --text 'In the beginning'";
    for (const std::string& args : {std::string("-n 4") + files, model + files}) {
        CAPTURE(args);
        const test::RunResult r =
            test::run_command(test::mha_binary() + " " + args + " 2>&1 >/dev/full");
        CHECK(r.status == 2);
        CHECK_THAT(r.output, Catch::StartsWith("mha: error: cannot write to standard output"));
        CHECK(fs::is_empty(dir));
    }
    fs::remove_all(dir);
}

}  // namespace test_save
