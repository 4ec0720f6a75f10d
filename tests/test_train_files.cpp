// mha train's files while it runs: the lock on each output that keeps a second run out, a
// read-only target, and a write that fails mid-run (an I/O failure, not a divergence).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "helpers.h"

namespace test_train_files {

namespace {

namespace fs = std::filesystem;

// Small sizes that train in a few milliseconds a step.
const std::string small_sizes = "--context 16 --batch 2 -d 8 -H 2 --d-ff 16 --layers 1";

std::string text_so_far(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A run of many steps in the background, its stdout and stderr in `said`; returns once its
// first evaluation is printed (its files are locked by then).
pid_t start_long_run(const std::string& options, const std::string& said) {
    const pid_t child = fork();
    if (child == 0) {
        const std::string command = "exec " + test::mha_binary() + " train " + small_sizes +
                                    " --steps 1000000 " + options + " >" + said + " 2>&1";
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    for (int i = 0; i < 200 && text_so_far(said).find("step 0/") == std::string::npos; ++i)
        usleep(50000);
    return child;
}

// The command as a user who is not root, for whom a file's mode is binding: itself when the
// tests run as another user, else through setpriv as nobody ("" when that cannot be done).
std::string as_ordinary_user(const std::string& command) {
    if (getuid() != 0) return command;
    const std::string drop = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";
    if (test::run_command(drop + "true 2>&1").status != 0) return "";
    return drop + command;
}

int stop_with(pid_t child, int signal_number) {
    kill(child, signal_number);
    int status = 0;
    waitpid(child, &status, 0);
    return status;
}

}  // namespace

TEST_CASE("two runs of mha train on one --out or --log: the second is refused", "[train]") {
    const fs::path dir = test::temp_path("train-lock");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = (dir / "m.npz").string(), log = (dir / "run.jsonl").string();
    const std::string said = (dir / "said.txt").string();
    const int signal_number = GENERATE(SIGINT, SIGTERM);
    const pid_t first = start_long_run("--out " + out + " --log " + log, said);
    REQUIRE(first > 0);
    CHECK(fs::exists(out + ".lock"));
    CHECK(fs::exists(log + ".lock"));
    const std::string log_before = text_so_far(log);
    test::check_rejected("train " + small_sizes + " --steps 5 --out " + out,
                         "--out " + out + " is being written by another mha train (it holds " +
                             out + ".lock); wait for that run to end, or give --out another name");
    const std::string other = (dir / "other.npz").string();
    test::check_rejected("train " + small_sizes + " --steps 5 --out " + other + " --log " + log,
                         "--log " + log + " is being written by another mha train (it holds " +
                             log + ".lock); wait for that run to end, or give --log another name");
    CHECK_FALSE(fs::exists(other));
    CHECK_FALSE(fs::exists(other + ".lock"));
    CHECK(text_so_far(log).rfind(log_before, 0) == 0);  // the refused run truncated nothing
    const int status = stop_with(first, signal_number);
    if (signal_number == SIGINT) {
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 130);
    } else {
        CHECK(WIFSIGNALED(status));
    }
    // every way out removes the lock files; a run may then write the file
    CHECK_FALSE(fs::exists(out + ".lock"));
    CHECK_FALSE(fs::exists(log + ".lock"));
    CHECK(test::run_mha("train " + small_sizes + " --steps 2 --out " + out + " --log " + log)
              .status == 0);
    CHECK_FALSE(fs::exists(out + ".lock"));
    fs::remove_all(dir);
}

TEST_CASE("a refused run of mha train leaves no lock file", "[train]") {
    const fs::path dir = test::temp_path("train-lock-refused");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string out = (dir / "m.npz").string();
    test::check_rejected("train --corpus /dev/null --out " + out, "/dev/null is empty");
    CHECK(fs::is_empty(dir));
    // a link where the lock file goes is refused, never followed
    const std::string victim = (dir / "victim").string();
    fs::create_symlink(victim, out + ".lock");
    test::check_rejected("train --out " + out,
                         "cannot write " + out + ".lock: Too many levels of symbolic links");
    CHECK_FALSE(fs::exists(victim));
    CHECK(fs::is_symlink(out + ".lock"));
    fs::remove_all(dir);
}

TEST_CASE("a --log write that fails mid-run is an I/O error, not a divergence", "[train]") {
    const fs::path dir = test::temp_path("train-log-full");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string log = (dir / "run.jsonl").string(), out = (dir / "m.npz").string();
    // a file size limit of one block (512 bytes in sh): the first evaluations' lines fit, a
    // later one fails with EFBIG, as a full disk fails with ENOSPC
    const test::RunResult r = test::run_command("ulimit -f 1; " + test::mha_binary() + " train " +
                                                small_sizes + " --steps 20 --eval-every 1 --log " +
                                                log + " --out " + out + " 2>&1 >/dev/null");
    CHECK(r.status == 2);
    CHECK(r.output == "mha: error: cannot write " + log + ": File too large\n");
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(log + ".lock"));
    fs::remove_all(dir);
}

TEST_CASE("a read-only --out is replaced by a read-only checkpoint, as a user who is not root",
          "[train]") {
    const fs::path dir = test::temp_path("train-read-only");
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::all);  // nobody may make and rename files in it
    const std::string out = (dir / "m.npz").string();
    const std::string run = as_ordinary_user(fs::absolute(test::mha_binary()).string() + " train " +
                                             small_sizes + " --out " + out);
    if (run.empty()) {
        WARN("skipped: the tests run as root and setpriv cannot drop to nobody");
        return;
    }
    REQUIRE(test::run_command(run + " --steps 1 >/dev/null 2>&1").status == 0);
    const std::string first = test::read_text(out);
    fs::permissions(out, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    // the pre-run check passed before, and the write after the run failed: Permission denied
    const test::RunResult r = test::run_command(run + " --steps 2 2>&1 >/dev/null");
    CHECK(r.output.empty());
    CHECK(r.status == 0);
    CHECK(test::read_text(out) != first);
    CHECK((fs::status(out).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
    fs::remove_all(dir);
}

TEST_CASE("--context 1 is refused before anything is written", "[train]") {
    const fs::path dir = test::temp_path("train-context-1");
    fs::remove_all(dir);
    fs::create_directories(dir);
    test::check_rejected("train --context 1 --steps 2 --log " + (dir / "run.jsonl").string() +
                             " --out " + (dir / "m.npz").string(),
                         "train --context must be at least 2, got 1: each evaluation writes "
                         "context / 2 random letters twice to score induction heads");
    CHECK(fs::is_empty(dir));
    // 2, the smallest, trains and evaluates
    CHECK(test::run_mha("train --context 2 --steps 2 --eval-every 1 --batch 2 -d 8 -H 2"
                        " --d-ff 16 --layers 1 --out " +
                        (dir / "m.npz").string())
              .status == 0);
    fs::remove_all(dir);
}

}  // namespace test_train_files
