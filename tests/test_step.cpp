// --step pauses between steps (one key: Enter, b, q), says "step 4 (5 of n)" with the
// trace's own numbers and erases its prompt, redraws a step it goes back to on a cleared
// screen, leaves the waits for keys out of the wall time, gives the terminal back on Ctrl-Z
// and takes it again on fg (driven on a pty), and is --trace byte for byte without a
// terminal; --format markdown is a table of the steps for course notes; --explain adds a
// paragraph per kind of step.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "app/cli/cli.h"
#include "app/run/problem.h"
#include "app/run/variants.h"
#include "core/pass/attention.h"
#include "helpers.h"
#include "show/markdown_report.h"
#include "show/stepper.h"

namespace test_step {

using namespace mha;

namespace {

const std::string erase = "\r\x1b[K";  // carriage return, erase the line

// Keys from a script: each character is one key press (Enter is '\n').
class ScriptedKeys : public KeySource {
public:
    explicit ScriptedKeys(std::string keys) : keys_(std::move(keys)) {}
    Key next_key() override {
        if (at_ == keys_.size()) return Key::End;
        return key_of(std::string(1, keys_[at_++]));
    }

private:
    std::string keys_;
    std::size_t at_ = 0;
};

// Steps 1 and 2 of a tiny run, as the forward pass reports them.
Step step_numbered(int number, const std::string& tensor, const Tensor& value) {
    Step step;
    step.kind = mha::StepKind::Project;
    step.number = number;
    step.name = "project";
    step.tensor = tensor;
    step.expression = tensor + " = x @ W.T";
    step.dims = {"B", "N", "d_model"};
    step.shape = value.shape();
    step.strides = value.strides();
    return step;
}

RunInfo tiny_run() {
    RunInfo info;
    info.batch = info.seq_len = info.kv_len = 1;
    info.d_model = info.kdim = info.vdim = 2;
    info.heads = 1;
    info.head_dim = 2;
    info.parameters = 24;
    info.weights_source = info.inputs_source = "seeded (seed 0)";
    return info;
}

// Runs three steps, numbered 0, 2 and 2 as a trace may number them, through a Stepper fed
// with keys; returns what went to out.
std::string stepped(const std::string& keys, std::string& prompts) {
    std::ostringstream out, prompt_out;
    Stepper stepper(out, std::make_unique<ScriptedKeys>(keys), prompt_out, 3);
    const Tensor t({1, 1, 2}, {1.0f, 2.0f});
    stepper.begin(tiny_run());
    try {
        for (int n = 1; n <= 3; ++n) {
            stepper.on_step(step_numbered(n == 1 ? 0 : 2, "T" + std::to_string(n), t));
        }
    } catch (const StepQuit&) {
        prompts = prompt_out.str();
        return out.str() + "[quit]";
    }
    prompts = prompt_out.str();
    return out.str();
}

// "-d 16 -H 2" -> {"-d", "16", "-H", "2"} (no quoting needed here)
std::vector<std::string> words_of_options(const std::string& options) {
    std::istringstream in(options);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

std::size_t count_of(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
        ++n;
    return n;
}

// mha on a pseudo-terminal, with a stand-in for a shell with job control: a child leads a
// new session with the pty as its controlling terminal and runs the command in a process
// group of its own, in the foreground. (Without that parent in its session, mha's group
// would be orphaned, and the kernel does not stop an orphaned group on Ctrl-Z.)
class PtyRun {
public:
    explicit PtyRun(const std::string& command) {
        master_ = posix_openpt(O_RDWR | O_NOCTTY);
        REQUIRE(master_ >= 0);
        REQUIRE(grantpt(master_) == 0);
        REQUIRE(unlockpt(master_) == 0);
        const std::string slave = ptsname(master_);
        const std::string shell_command = "exec " + command;
        int pid_pipe[2];
        REQUIRE(pipe(pid_pipe) == 0);
        shell_ = fork();
        REQUIRE(shell_ >= 0);
        if (shell_ == 0) stand_in_shell(slave.c_str(), shell_command.c_str(), pid_pipe[1]);
        close(pid_pipe[1]);
        pollfd ready{pid_pipe[0], POLLIN, 0};
        REQUIRE(poll(&ready, 1, 10000) == 1);
        REQUIRE(read(pid_pipe[0], &mha_, sizeof mha_) == sizeof mha_);
        close(pid_pipe[0]);
    }

    ~PtyRun() {
        if (mha_ > 0 && !ended_) {
            kill(-mha_, SIGKILL);
            kill(-mha_, SIGCONT);
        }
        if (shell_ > 0 && !ended_) waitpid(shell_, nullptr, 0);
        close(master_);
    }

    // Reads what the terminal shows until `text` has appeared `times` times, for up to 10 s.
    bool shows(const std::string& text, std::size_t times = 1) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (count(text) < times && std::chrono::steady_clock::now() < end) {
            pollfd ready{master_, POLLIN, 0};
            if (poll(&ready, 1, 100) != 1) continue;
            char buffer[4096];
            const ssize_t n = read(master_, buffer, sizeof buffer);
            if (n <= 0) break;
            screen_.append(buffer, std::size_t(n));
        }
        return count(text) >= times;
    }

    void type(const std::string& keys) {
        REQUIRE(write(master_, keys.data(), keys.size()) == ssize_t(keys.size()));
    }

    // The terminal's mode (the master reports the slave side's termios).
    termios mode() const {
        termios now{};
        REQUIRE(tcgetattr(master_, &now) == 0);
        return now;
    }

    // Whether mha is stopped within 10 s (its state in /proc/PID/stat is T).
    bool stopped() const {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < end) {
            const std::string stat = test::read_text("/proc/" + std::to_string(mha_) + "/stat");
            if (stat.substr(stat.rfind(')') + 2, 1) == "T") return true;
            usleep(10000);
        }
        return false;
    }

    // What `fg` does after the shell has given the terminal back: SIGCONT to the group.
    void resume() const { REQUIRE(kill(-mha_, SIGCONT) == 0); }

    // mha's exit status (the stand-in passes it on), -1 when it did not exit.
    int status() {
        int status = 0;
        REQUIRE(waitpid(shell_, &status, 0) == shell_);
        ended_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    const std::string& screen() const { return screen_; }

private:
    std::size_t count(const std::string& text) const { return count_of(screen_, text); }

    // The child: only async-signal-safe calls between fork and exec.
    [[noreturn]] static void stand_in_shell(const char* slave, const char* command, int pid_out) {
        setsid();
        const int terminal = open(slave, O_RDWR);
        if (terminal < 0 || ioctl(terminal, TIOCSCTTY, 0) != 0) _exit(126);
        const pid_t job = fork();
        if (job == 0) {
            sigset_t ttou, old;
            sigemptyset(&ttou);
            sigaddset(&ttou, SIGTTOU);
            sigprocmask(SIG_BLOCK, &ttou, &old);  // a background group may then take the terminal
            setpgid(0, 0);
            tcsetpgrp(terminal, getpid());
            sigprocmask(SIG_SETMASK, &old, nullptr);
            dup2(terminal, STDIN_FILENO);
            dup2(terminal, STDOUT_FILENO);
            dup2(terminal, STDERR_FILENO);
            execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
            _exit(127);
        }
        setpgid(job, job);
        [[maybe_unused]] const ssize_t sent = write(pid_out, &job, sizeof job);
        int status = 0;
        while (waitpid(job, &status, 0) < 0) {
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
    }

    int master_ = -1;
    pid_t shell_ = -1;
    pid_t mha_ = -1;
    bool ended_ = false;
    std::string screen_;
};

bool raw(const termios& mode) { return (mode.c_lflag & (ICANON | ECHO)) == 0; }
bool cooked(const termios& mode) { return (mode.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO); }

}  // namespace

TEST_CASE("--step without a terminal prints exactly what --trace prints", "[step]") {
    const std::string options =
        GENERATE(as<std::string>{}, "", " -b 1 -n 4 -m 6 -d 16 -H 2 --causal",
                 " --values -b 1 -n 2 -d 4 -H 2");
    CAPTURE(options);
    const auto without_time = [](const std::string& s) { return s.substr(0, s.find("wall time")); };
    const test::RunResult trace = test::run_mha("--trace -t 1" + options + " </dev/null");
    const test::RunResult step = test::run_mha("--step -t 1" + options + " </dev/null");
    REQUIRE(trace.status == 0);
    CHECK(step.status == 0);
    CHECK(without_time(step.output) == without_time(trace.output));
    CHECK_THAT(step.output, !Catch::Contains("Enter"));
}

TEST_CASE("--step: Enter shows the next step, b the one before, q stops", "[step]") {
    std::string prompts;
    SECTION("Enter after every step prints each step once; each prompt says where and goes") {
        const std::string out = stepped("\n\n\n", prompts);
        CHECK(count_of(out, "T1 = x @ W.T") == 1);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(prompts == "-- step 0 (1 of 3) · Enter: next  b: back  q: quit -- " + erase +
                             "-- step 2 (2 of 3) · Enter: next  b: back  q: quit -- " + erase +
                             "-- step 2 (3 of 3) · Enter: next  b: back  q: quit -- " + erase);
    }
    SECTION("space and n go on too; other keys are ignored") {
        const std::string out = stepped(" xn\n", prompts);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(count_of(prompts, "step 2 (2 of 3)") == 2);  // x asked again
    }
    SECTION("b shows the previous step again on a cleared screen, Enter returns to the newest") {
        // after T2: b shows T1, Enter shows T2 again, Enter goes on to T3
        const std::string out = stepped("\nb\n\n\n\n", prompts);
        const std::string cleared = "\x1b[H\x1b[2J";
        CHECK(count_of(out, "T1 = x @ W.T") == 2);
        CHECK(count_of(out, "T2 = x @ W.T") == 2);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(count_of(out, cleared) == 2);  // once for T1, once for T2 again
        // T1 again comes after T2, alone on a cleared screen, then T2 alone, then T3 below it
        const std::size_t back = out.find(cleared);
        REQUIRE(back != std::string::npos);
        CHECK(out.find("T2 = x @ W.T") < back);
        CHECK(out.find("T1 = x @ W.T", back) < out.find(cleared, back + 1));
        CHECK(out.find("T2 = x @ W.T", back) > out.find(cleared, back + 1));
        CHECK(out.find("T1 = x @ W.T", out.find(cleared, back + 1)) == std::string::npos);
        CHECK_THAT(prompts, Catch::Contains("step 2 (2 of 3) · Enter: next  b: back  q: quit -- " +
                                            erase + "-- step 0 (1 of 3)"));
    }
    SECTION("b on the first step shows it again") {
        const std::string out = stepped("b\n\n\n\n", prompts);
        CHECK(count_of(out, "T1 = x @ W.T") == 2);
    }
    SECTION("the wall time leaves out the waits for keys") {
        // three keys, each after 150 ms; the pass itself (three on_step calls) takes far less
        class SlowKeys : public KeySource {
        public:
            Key next_key() override {
                std::this_thread::sleep_for(std::chrono::milliseconds(150));
                return Key::Next;
            }
        };
        std::ostringstream out, prompt_out;
        Stepper stepper(out, std::make_unique<SlowKeys>(), prompt_out, 3);
        const Tensor t({1, 1, 2}, {1.0f, 2.0f});
        stepper.begin(tiny_run());
        const auto start = std::chrono::steady_clock::now();
        for (int n = 1; n <= 3; ++n) stepper.on_step(step_numbered(n, "T", t));
        const double wall_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        REQUIRE(wall_ms >= 450.0);
        ForwardResult result;
        result.output = t;
        stepper.finish(result, wall_ms);
        const std::string text = out.str();
        const std::size_t at = text.find("wall time: ");
        REQUIRE(at != std::string::npos);
        CHECK(std::stod(text.substr(at + 11)) < 100.0);
    }
    SECTION("q stops before the next step") {
        const std::string out = stepped("\nq\n", prompts);
        CHECK(count_of(out, "T2 = x @ W.T") == 1);
        CHECK(count_of(out, "T3 = x @ W.T") == 0);
        CHECK_THAT(out, Catch::EndsWith("[quit]"));
    }
    SECTION("when the keys run out the rest prints without pauses") {
        const std::string out = stepped("\n", prompts);
        CHECK(count_of(out, "T3 = x @ W.T") == 1);
        CHECK(count_of(prompts, "Enter: next") == 2);
    }
}

TEST_CASE("--step on a terminal: Ctrl-Z gives the terminal back, fg takes it again", "[step]") {
    PtyRun run(test::mha_binary() + " --step -b 1 -n 2 -d 4 -H 2 -t 1");
    REQUIRE(run.shows("-- step 0 (1 of "));
    CHECK(raw(run.mode()));
    run.type("\x1a");  // Ctrl-Z: the terminal sends SIGTSTP to the foreground group
    REQUIRE(run.stopped());
    CHECK(cooked(run.mode()));  // a shell (or stty -a) sees the mode it had before mha
    run.resume();
    REQUIRE(run.shows("-- step 0 (1 of ", 2));  // the prompt drawn again
    CHECK(raw(run.mode()));
    run.type("n");  // one key, no Enter: only raw mode passes it on at once
    CHECK(run.shows("-- step 1 (2 of "));
    run.type("q");
    CHECK(run.status() == 0);
    CHECK(cooked(run.mode()));
    CHECK_THAT(run.screen(), !Catch::Contains("-- step 1 (3 of "));
}

TEST_CASE("--step on a terminal counts the block's and the model's planned steps", "[step]") {
    // the block: 19 attention steps and its 7; the model: the embedding, layer 1 as one step,
    // layer 0's block (26), the final norm and the logits
    const auto [options, total] = GENERATE(table<std::string, std::string>(
        {{" --block pre -b 1 -n 2 -d 4 -H 2", "26"},
         {" --model ../examples/models/kjv-2x4.npz --text 'In the'", "30"}}));
    CAPTURE(options);
    PtyRun run(test::mha_binary() + " --step" + options);
    REQUIRE(run.shows(" (1 of " + total + ") "));
    run.type("q");
    CHECK(run.status() == 0);
}

TEST_CASE("--step reads keys as a terminal sends them", "[step]") {
    CHECK(key_of("\r") == Key::Next);  // Enter in raw mode
    CHECK(key_of("\n") == Key::Next);
    CHECK(key_of(" ") == Key::Next);
    CHECK(key_of("\x1b[C") == Key::Next);  // right arrow
    CHECK(key_of("\x1bOC") == Key::Next);  // right arrow, application mode
    CHECK(key_of("b") == Key::Back);
    CHECK(key_of("\x1b[D") == Key::Back);  // left arrow
    CHECK(key_of("\x7f") == Key::Back);    // backspace
    CHECK(key_of("q") == Key::Quit);
    CHECK(key_of("\x04") == Key::Quit);     // Ctrl-D
    CHECK(key_of("\x1b") == Key::Quit);     // Escape alone
    CHECK(key_of("\x1b[A") == Key::Other);  // up arrow
    CHECK(key_of("x") == Key::Other);
}

TEST_CASE("--step counts the steps it will show, in every form", "[step]") {
    const std::string options = GENERATE(
        as<std::string>{}, "", " -b 1 -n 4 -m 6 -d 16 -H 2 --causal", " --per-head -d 16 -H 2",
        " --decode 3 -d 16 -H 2", " --fused-qkv -d 16 -H 2", " --block pre -d 16 -H 2",
        " --block post -d 16 -H 2 --rope half", " -d 16 -H 4 --kv-heads 2 --window 3",
        " --form mla -d 16 -H 2 --latent-dim 8 --rope-dim 4 -n 3",
        " --form mla -d 16 -H 2 -n 5 --attention streaming --window 2");
    CAPTURE(options);
    const Config config = parse_args(words_of_options(options));
    const Problem problem = build_problem(config);
    struct Counter : Tracer {
        std::size_t steps = 0;
        void on_step(const Step&) override { ++steps; }
    } counter;
    run_pass(config, problem, counter);
    CHECK(dry_tally(config, problem).steps == counter.steps);
}

TEST_CASE("--step walks the backward's steps, and b goes back across into the forward's",
          "[step][backward]") {
    // as the command line gives it: --step shows the weights, so auto takes the standard path
    const Config config =
        parse_args(words_of_options("--step --backward -b 1 -n 3 -d 8 -H 2 -t 1"));
    const Problem problem = build_problem(config);
    const std::size_t total = dry_tally(config, problem).steps;
    struct Counter : Tracer {
        std::size_t forward = 0, backward = 0;
        void on_step(const Step& step) override { ++(step.backward ? backward : forward); }
    } counter;
    run_backward(config, problem, counter);
    // self-attention: x, 1-3, 4 and 5 three times each, 6-14 (19 steps); the backward 30
    REQUIRE(counter.forward == 19);
    REQUIRE(counter.backward == 30);
    CHECK(total == counter.forward + counter.backward);
    // Enter through the forward's 19 steps to b14 (dOut), then b twice, Enter twice to be back
    // at b14, Enter once more to go on to db_o... (the keys then run out)
    const std::string keys = std::string(19, '\n') + "bb\n\n\n";
    std::ostringstream out, prompt_out;
    Stepper stepper(out, std::make_unique<ScriptedKeys>(keys), prompt_out, total);
    stepper.begin(problem.info);
    run_backward(config, problem, stepper);
    const std::string prompts = prompt_out.str();
    const std::string of =
        " of " + std::to_string(total) + ") · Enter: next  b: back  q: quit -- ";
    CHECK_THAT(prompts, Catch::Contains("-- step 14 (19" + of + erase + "-- step b14 (20" + of +
                                        erase + "-- step 14 (19" + of + erase + "-- step 13 (18" +
                                        of + erase + "-- step 14 (19" + of + erase +
                                        "-- step b14 (20" + of + erase + "-- step b14 (21" + of +
                                        erase));
    // the steps gone back to are drawn alone again: 14's output, then b14's dOut
    const std::string text = out.str();
    CHECK(count_of(text, "output = concat @ W_o.T + b_o") == 3);
    CHECK(count_of(text, "dOut = output.grad") == 2);
    CHECK(count_of(text, "\x1b[H\x1b[2J") == 4);
}

TEST_CASE("--step --backward without a terminal prints exactly what --trace prints",
          "[step][backward]") {
    const auto without_time = [](const std::string& s) { return s.substr(0, s.find("wall time")); };
    const std::string options = " --backward -t 1 -b 1 -n 3 -m 4 -d 8 -H 2 -G 1 --causal";
    const test::RunResult trace = test::run_mha("--trace" + options + " </dev/null");
    const test::RunResult step = test::run_mha("--step" + options + " </dev/null");
    REQUIRE(trace.status == 0);
    CHECK(step.status == 0);
    CHECK_THAT(trace.output, Catch::Contains("\nb14  grad         dOut = output.grad"));
    CHECK(without_time(step.output) == without_time(trace.output));
}

TEST_CASE("--format markdown: one table row per step, no time, same page every run", "[markdown]") {
    const test::RunResult r =
        test::run_mha("--format markdown -b 1 -n 3 -d 8 -H 2 --causal", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output,
               Catch::StartsWith("## Multi-head attention: B=1, N=3, M=3, d_model=8, h=2, d_k=4, "
                                 "self-attention, bias, causal, " +
                                 std::string(mha::kernel_variant_name()) + " kernels\n"));
    CHECK_THAT(
        r.output,
        Catch::Contains(
            "| step | operation | expression | shape | strides | contiguous | copied | MACs |"));
    // step 5: (B=1, N=3, h=2, d_k=4) with strides (24, 8, 4, 1) transposed to (24, 4, 8, 1)
    CHECK_THAT(r.output, Catch::Contains("| 5 | transpose | `Q.transpose(1, 2)` (einops: "
                                         "`b n h d -> b h n d`) | (B=1, h=2, N=3, d_k=4) | "
                                         "(24, 4, 8, 1) | **no** | 0 B | 0 |"));
    // step 12 copies B·N·d_model floats: 1·3·8·4 = 96 bytes
    CHECK_THAT(r.output,
               Catch::Contains("| 12 | contiguous | `context.contiguous()` | "
                               "(B=1, N=3, h=2, d_k=4) | (24, 8, 4, 1) | yes | 96 B | 0 |"));
    CHECK_THAT(r.output, Catch::Contains("- step 8: causal: query i attends to keys 0..i"));
    // 4 projections of 1·3·8·8 = 192 MACs, plus scores and context of 1·2·3·3·4 = 72 each
    CHECK_THAT(r.output, Catch::Contains("Total: 96 B copied, 912 multiply-adds."));
    // 32 lines of table and notes (step 14's note on W_o among them), and the mask grid: its
    // fences, heading, key line, 3 queries and a blank line
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 32 + 8);
    CHECK(test::run_mha("--format markdown -b 1 -n 3 -d 8 -H 2 --causal -t 2", false).output ==
          r.output);
}

TEST_CASE("a markdown cell escapes the table's bar", "[markdown]") {
    std::ostringstream out;
    MarkdownReport report(out);
    report.begin(RunInfo{});
    const Tensor t({1, 1, 2}, {1.0f, 2.0f});
    Step step = step_numbered(1, "T", t);
    step.expression = "a | b";
    report.on_step(step);
    CHECK_THAT(out.str(), Catch::Contains("`a \\| b`"));
}

TEST_CASE("markdown escapes file names: no tag, link or control character from a name",
          "[markdown]") {
    std::ostringstream out;
    MarkdownReport report(out);
    RunInfo info;
    info.weights_source = "<img src=x onerror=alert(1)>[a](b)*c*\x1B[31m.npz";
    info.inputs_source = "x_`y`.npy";
    report.begin(info);
    CHECK_THAT(out.str(),
               Catch::Contains("Weights: \\<img src=x onerror=alert(1)\\>\\[a\\](b)\\*c\\*"
                               "\xEF\xBF\xBD\\[31m.npz. Inputs: x\\_\\`y\\`.npy."));
}

TEST_CASE("--step with another format is refused", "[step]") {
    const test::RunResult r = test::run_mha("--step --format json");
    CHECK(r.status == 2);
    CHECK_THAT(r.output, Catch::StartsWith("mha: error: --step pauses the text trace"));
}

TEST_CASE("markdown with --shapes-only ends without output statistics", "[markdown]") {
    const test::RunResult r =
        test::run_mha("--format markdown --shapes-only -b 1 -n 3 -d 8 -H 2", false);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.output, Catch::EndsWith("Total: 96 B copied, 912 multiply-adds. "
                                         "Shapes only: nothing was computed.\n"));
    CHECK_THAT(r.output, !Catch::Contains("nan"));
}

}  // namespace test_step
