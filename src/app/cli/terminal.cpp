// Terminal facts from the environment, isatty and the TIOCGWINSZ ioctl.

#include "app/cli/terminal.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>

#include "core/error.h"

namespace mha {

namespace {

constexpr std::size_t fallback_width = 80;

bool set(const char* variable) { return variable != nullptr && variable[0] != '\0'; }

// The terminal's mode before --step changed it and the raw mode it set, for the handlers.
termios saved_mode{};
termios raw_mode{};
// Signals that end the process, then the two of job control: Ctrl-Z (SIGTSTP) and fg or bg
// (SIGCONT).
constexpr int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT};
struct sigaction previous_actions[std::size(handled_signals)];
// raw_again writes a byte to this pipe, so the wait for a key ends and the prompt is drawn
// again, even when the process stopped before that wait began (a flag could be missed).
int wake_pipe[2] = {-1, -1};

void erase_prompt() {
    const char erase[] = "\r\x1b[K";
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, erase, sizeof erase - 1);
}

const struct sigaction& previous_action(int signal_number) {
    std::size_t i = 0;
    while (handled_signals[i] != signal_number) ++i;
    return previous_actions[i];
}

void take_previous_action(int signal_number) {
    sigaction(signal_number, &previous_action(signal_number), nullptr);
}

// Restores the terminal, then lets the signal do what it did before (for SIGINT: end the
// process, or the --save/--export-svg handler that removes a temporary file first).
extern "C" void restore_terminal_and_resignal(int signal_number) {
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
    erase_prompt();
    take_previous_action(signal_number);
    raise(signal_number);
}

// fg or bg: raw mode again (in the background the terminal stops the process with SIGTTOU
// until fg, as it does any program that sets a terminal it does not hold).
extern "C" void raw_again(int) {
    const int saved_errno = errno;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw_mode);
    const char wake = 0;
    [[maybe_unused]] const ssize_t written = write(wake_pipe[1], &wake, 1);  // never blocks
    errno = saved_errno;
}

// Ctrl-Z: the shell gets the terminal in its own mode, without the prompt, and the process
// stops as it did before; once continued (where an orphaned process group is not stopped at
// all, at once), this handler comes back and the terminal is raw again.
extern "C" void suspend_in_saved_mode(int signal_number) {
    const int saved_errno = errno;
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
    erase_prompt();
    stop_as_before(signal_number, previous_action(signal_number));
    raw_again(signal_number);
    errno = saved_errno;
}

using Handler = void (*)(int);
Handler handler_of(int signal_number) {
    if (signal_number == SIGTSTP) return suspend_in_saved_mode;
    if (signal_number == SIGCONT) return raw_again;
    return restore_terminal_and_resignal;
}

constexpr int resumed = -2;

// One byte from stdin within timeout_ms (-1: wait); -1 when none came, `resumed` when the
// process was continued (fg) since the last call.
int read_byte(int timeout_ms) {
    pollfd ready[] = {{STDIN_FILENO, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
    int events = 0;
    do events = poll(ready, std::size(ready), timeout_ms);
    while (events < 0 && errno == EINTR);
    if (events <= 0) return -1;
    if (ready[1].revents != 0) {
        char wakes[16];
        while (read(wake_pipe[0], wakes, sizeof wakes) > 0) {
        }
        return resumed;
    }
    unsigned char byte = 0;
    ssize_t got = 0;
    do got = read(STDIN_FILENO, &byte, 1);
    while (got < 0 && errno == EINTR);
    return got == 1 ? byte : -1;
}

void close_wake_pipe() {
    for (int& end : wake_pipe) {
        if (end >= 0) close(end);
        end = -1;
    }
}

}  // namespace

Shading choose_shading(ColorChoice choice, bool stdout_is_terminal, const char* no_color,
                       const char* colorterm) {
    if (choice == ColorChoice::Force256) return Shading::Colour256;
    if (choice == ColorChoice::ForceTrueColour) return Shading::TrueColour;
    const bool colour = choice == ColorChoice::Always ||
                        (choice == ColorChoice::Auto && stdout_is_terminal && !set(no_color));
    if (!colour) return Shading::Plain;
    const bool full = set(colorterm) && (std::strcmp(colorterm, "truecolor") == 0 ||
                                         std::strcmp(colorterm, "24bit") == 0);
    return full ? Shading::TrueColour : Shading::Colour256;
}

std::size_t terminal_width(const char* columns_variable, bool stdout_is_terminal) {
    if (set(columns_variable)) {
        char* end = nullptr;
        const unsigned long width = std::strtoul(columns_variable, &end, 10);
        if (*end == '\0' && width > 0) return width;
    }
    winsize size{};
    if (stdout_is_terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        return size.ws_col;
    return fallback_width;
}

bool dumb_terminal(const char* term) { return !set(term) || std::strcmp(term, "dumb") == 0; }

bool stdout_takes_escapes() {
    return isatty(STDOUT_FILENO) == 1 && !dumb_terminal(std::getenv("TERM"));
}

HeatmapStyle terminal_style(ColorChoice choice) {
    const bool terminal = isatty(STDOUT_FILENO) == 1;
    HeatmapStyle style;
    style.width = terminal_width(std::getenv("COLUMNS"), terminal);
    style.shading = choose_shading(choice, stdout_takes_escapes(), std::getenv("NO_COLOR"),
                                   std::getenv("COLORTERM"));
    return style;
}

TerminalKeys::TerminalKeys() {
    if (tcgetattr(STDIN_FILENO, &saved_mode) != 0) return;  // then it reads bytes as they come
    raw_mode = saved_mode;
    raw_mode.c_lflag &= ~tcflag_t(ICANON | ECHO);
    raw_mode.c_cc[VMIN] = 1;
    raw_mode.c_cc[VTIME] = 0;
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    for (std::size_t i = 0; i < std::size(handled_signals); ++i) {
        struct sigaction action {};
        action.sa_handler = handler_of(handled_signals[i]);
        sigemptyset(&action.sa_mask);        // one handler at a time, but fg reaches raw_again
        for (int other : handled_signals) {  // while suspend_in_saved_mode waits
            if (other != SIGCONT) sigaddset(&action.sa_mask, other);
        }
        sigaction(handled_signals[i], nullptr, &previous_actions[i]);
        if (previous_actions[i].sa_handler != SIG_IGN)  // an ignored signal stays ignored
            sigaction(handled_signals[i], &action, nullptr);
    }
    raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw_mode) == 0;
    if (raw_) return;
    for (std::size_t i = 0; i < std::size(handled_signals); ++i)
        sigaction(handled_signals[i], &previous_actions[i], nullptr);
    close_wake_pipe();
}

TerminalKeys::~TerminalKeys() {
    if (!raw_) return;
    for (std::size_t i = 0; i < std::size(handled_signals); ++i)
        sigaction(handled_signals[i], &previous_actions[i], nullptr);
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
    close_wake_pipe();
}

// A key is one byte, or an escape sequence (an arrow: ESC [ C) read while its bytes keep
// arriving; a lone Escape is followed by nothing within 30 ms.
Key TerminalKeys::next_key() {
    const int first = read_byte(-1);
    if (first == resumed) return Key::Other;  // the prompt is drawn again
    if (first < 0) return Key::End;
    std::string bytes(1, char(first));
    if (first == 0x1b) {
        for (int next = read_byte(30); next >= 0; next = read_byte(30)) {
            bytes += char(next);
            if (bytes.size() >= 3 && (std::isalpha(next) || next == '~')) break;
        }
    }
    return key_of(bytes);
}

void stop_as_before(int signal_number, const struct sigaction& previous) {
    struct sigaction own {};
    sigaction(signal_number, nullptr, &own);
    sigaction(signal_number, &previous, nullptr);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, signal_number);
    sigprocmask(SIG_UNBLOCK, &stop, nullptr);  // blocked while its handler runs
    raise(signal_number);
    sigaction(signal_number, &own, nullptr);
}

void check_stdout() {
    errno = 0;
    std::cout.flush();
    const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
    if (failed) {
        // a write that failed earlier, when the buffer filled, has left no errno to report
        const std::string why = errno ? std::strerror(errno) : "a write failed";
        std::clearerr(stdout);
        std::cout.clear();
        throw Error("cannot write to standard output: " + why);
    }
}

}  // namespace mha
