// bench_torch.py in a child process, talked to over a socket pair: one order a line on its
// stdin, one answer a line on its stdout.

#include "app/bench/torch_process.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"

namespace mha {

namespace {

const char* const torch_python = "/usr/bin/python3";
const char* const torch_script = "src/app/bench/bench_torch.py";

const char* mode_flag(TorchProcess::Mode mode) {
    switch (mode) {
        case TorchProcess::Mode::Backward:
            return " --backward";
        case TorchProcess::Mode::Train:
            return " --train";
        case TorchProcess::Mode::Checkpoint:
            return " --checkpoint";
        case TorchProcess::Mode::Forward:
            break;
    }
    return "";
}

// `text` as one word for /bin/sh: in single quotes, each ' written as '\''.
std::string shell_quoted(const std::string& text) {
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

}  // namespace

std::string reference_blas(const std::string& libraries) {
    std::istringstream lines(libraries);
    std::string path;
    while (std::getline(lines, path)) {
        const std::size_t slash = path.rfind('/');
        if (slash != std::string::npos && slash >= 5 && path.compare(slash - 5, 5, "/blas") == 0 &&
            path.compare(slash + 1, 9, "libblas.s") == 0)
            return path;
    }
    return "";
}

void check_torch_side() {
    if (!std::ifstream(torch_script).good())
        throw Error(std::string("--compare-torch runs ") + torch_script +
                    ": run mha bench from the repository root");
    const std::string probe = std::string(torch_python) + " " + torch_script + " --libraries";
    FILE* pipe = popen((probe + " 2>/dev/null").c_str(), "r");
    if (pipe == nullptr) throw Error("--compare-torch needs PyTorch: cannot run " + probe);
    std::string libraries;  // the files of the BLAS libraries torch loaded, one a line
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) libraries += buffer;
    if (pclose(pipe) != 0) throw Error("--compare-torch needs PyTorch: " + probe + " failed");
    const std::string reference = reference_blas(libraries);
    if (!reference.empty())
        throw Error("--compare-torch: PyTorch here multiplies with the reference BLAS (" +
                    reference +
                    "), about 50 times slower than OpenBLAS, so its times would not be its "
                    "best: install OpenBLAS first (apt-get install libopenblas0-pthread)");
}

// Our end of the socket pair is closed on exec, so the other children do not hold it open:
// closing it is the end of this child's input. A send to a child that has died returns an
// error (MSG_NOSIGNAL: no SIGPIPE).
TorchProcess::TorchProcess(Mode mode, std::size_t torch_threads, std::size_t blas_threads,
                           const std::string& dir)
    : setting_(std::to_string(torch_threads) + "/" + std::to_string(blas_threads)) {
    command_ = "env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=" + std::to_string(blas_threads) +
               " " + torch_python + " " + torch_script + mode_flag(mode) +
               (mode == Mode::Checkpoint ? " " + shell_quoted(dir) : "") + " --threads " +
               std::to_string(torch_threads);
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        throw Error("bench: cannot open a socket pair to PyTorch");
    std::cout.flush();
    pid_ = fork();
    if (pid_ < 0) {
        close(ends[0]);
        close(ends[1]);
        throw Error("bench: cannot start " + command_);
    }
    if (pid_ == 0) {
        dup2(ends[1], 0);
        dup2(ends[1], 1);
        close(ends[0]);
        close(ends[1]);
        execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(ends[1]);
    socket_ = ends[0];
    if (ask("") != std::vector<std::string>{"ready"}) {
        stop();
        fail("start");
    }
}

TorchProcess::~TorchProcess() { stop(); }

std::vector<std::string> TorchProcess::load(const std::string& size) {
    std::vector<std::string> words = ask("size " + size);
    if (words.size() < 2 || words[0] != "ready") fail("size " + size);
    words.erase(words.begin());
    return words;
}

double TorchProcess::run_ms(const std::string& form) {
    const std::vector<std::string> words = ask("run " + form);
    double ms = 0;
    if (words.size() != 1 || !(std::istringstream(words[0]) >> ms)) fail("run " + form);
    return ms;
}

// Sends `order` (none when empty) and reads the next line it prints, split into words (none
// when it has gone).
std::vector<std::string> TorchProcess::ask(const std::string& order) {
    if (!order.empty()) {
        const std::string line = order + "\n";
        if (send(socket_, line.data(), line.size(), MSG_NOSIGNAL) != ssize_t(line.size()))
            fail(order);
    }
    std::size_t end;
    while ((end = pending_.find('\n')) == std::string::npos) {
        char buffer[256];
        const ssize_t got = recv(socket_, buffer, sizeof buffer, 0);
        if (got <= 0) return {};
        pending_.append(buffer, std::size_t(got));
    }
    std::istringstream line(pending_.substr(0, end));
    pending_.erase(0, end + 1);
    std::vector<std::string> words;
    for (std::string word; line >> word;) words.push_back(word);
    return words;
}

// The order as the message shows it: a checkpoint's token ids cut after the first 40 characters.
void TorchProcess::fail(const std::string& order) const {
    constexpr std::size_t shown = 40;
    const std::string text = order.size() > shown ? order.substr(0, shown) + "..." : order;
    throw Error("bench: PyTorch did not answer '" + text + "': " + command_ +
                " (its own message, if any, is above)");
}

// Its input ends, so it leaves its loop and exits; then it is waited for.
void TorchProcess::stop() {
    if (socket_ >= 0) close(socket_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    socket_ = -1;
    pid_ = -1;
}

std::vector<std::unique_ptr<TorchProcess>> start_torch(TorchProcess::Mode mode,
                                                       const std::string& dir) {
    std::vector<std::unique_ptr<TorchProcess>> torch;
    for (const std::size_t torch_threads : {1, 2}) {
        for (const std::size_t blas_threads : {1, 2})
            torch.push_back(std::make_unique<TorchProcess>(mode, torch_threads, blas_threads, dir));
    }
    return torch;
}

}  // namespace mha
