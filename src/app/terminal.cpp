// Terminal facts from the environment, isatty and the TIOCGWINSZ ioctl.

#include "app/terminal.h"

#include <poll.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <iterator>

namespace mha {

namespace {

constexpr std::size_t fallback_width = 80;

bool set(const char* variable) { return variable != nullptr && variable[0] != '\0'; }

// The terminal's mode before --step changed it, for the signal handler.
termios saved_mode{};
constexpr int restoring_signals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previous_actions[3];

// Restores the terminal, then lets the signal do what it did before (for SIGINT: end the
// process, or the --save/--export-svg handler that removes a temporary file first).
extern "C" void restore_terminal_and_resignal(int signal_number) {
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
    const char erase[] = "\r\x1b[K";
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, erase, sizeof erase - 1);
    for (std::size_t i = 0; i < std::size(restoring_signals); ++i) {
        if (restoring_signals[i] == signal_number) sigaction(signal_number, &previous_actions[i], nullptr);
    }
    raise(signal_number);
}

// One byte from stdin within timeout_ms (-1: wait), or -1.
int read_byte(int timeout_ms) {
    pollfd ready{STDIN_FILENO, POLLIN, 0};
    if (poll(&ready, 1, timeout_ms) <= 0) return -1;
    unsigned char byte = 0;
    return read(STDIN_FILENO, &byte, 1) == 1 ? byte : -1;
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

HeatmapStyle terminal_style(ColorChoice choice) {
    const bool terminal = isatty(STDOUT_FILENO) == 1;
    HeatmapStyle style;
    style.width = terminal_width(std::getenv("COLUMNS"), terminal);
    style.shading =
        choose_shading(choice, terminal, std::getenv("NO_COLOR"), std::getenv("COLORTERM"));
    return style;
}

TerminalKeys::TerminalKeys() {
    if (tcgetattr(STDIN_FILENO, &saved_mode) != 0) return;  // then it reads bytes as they come
    termios raw = saved_mode;
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    struct sigaction action {};
    action.sa_handler = restore_terminal_and_resignal;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < std::size(restoring_signals); ++i) {
        sigaction(restoring_signals[i], nullptr, &previous_actions[i]);
        if (previous_actions[i].sa_handler != SIG_IGN)  // an ignored signal stays ignored
            sigaction(restoring_signals[i], &action, nullptr);
    }
    raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    if (raw_) return;
    for (std::size_t i = 0; i < std::size(restoring_signals); ++i)
        sigaction(restoring_signals[i], &previous_actions[i], nullptr);
}

TerminalKeys::~TerminalKeys() {
    if (!raw_) return;
    tcsetattr(STDIN_FILENO, TCSANOW, &saved_mode);
    for (std::size_t i = 0; i < std::size(restoring_signals); ++i)
        sigaction(restoring_signals[i], &previous_actions[i], nullptr);
}

// A key is one byte, or an escape sequence (an arrow: ESC [ C) read while its bytes keep
// arriving; a lone Escape is followed by nothing within 30 ms.
Key TerminalKeys::next_key() {
    const int first = read_byte(-1);
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

}  // namespace mha
