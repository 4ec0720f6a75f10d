// The table of files to remove on a signal, in fixed buffers, since a handler may not allocate.

#include "io/signal_cleanup.h"

#include <unistd.h>

#include <csignal>
#include <cstring>

namespace mha {

namespace {

constexpr int slots = 8;
constexpr std::size_t longest = 4096;
char paths[slots][longest];
volatile std::sig_atomic_t used[slots] = {};

extern "C" void remove_registered_and_die(int signal_number) {
    for (int i = 0; i < slots; ++i)
        if (used[i]) ::unlink(paths[i]);
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

// Once: the handler where the signal's action is the default. An ignored signal stays
// ignored, and a handler of the program's own (mha train's SIGINT, which saves a checkpoint)
// stays: the program then ends without a signal, through its ordinary way out.
void install_handler() {
    static const bool installed = [] {
        for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
            struct sigaction action {};
            action.sa_handler = remove_registered_and_die;
            sigemptyset(&action.sa_mask);
            struct sigaction previous {};
            sigaction(signal_number, nullptr, &previous);
            if (previous.sa_handler == SIG_DFL) sigaction(signal_number, &action, nullptr);
        }
        std::signal(SIGXFSZ, SIG_IGN);
        return true;
    }();
    (void)installed;
}

}  // namespace

int remove_on_signal(const std::string& path) {
    install_handler();
    if (path.size() >= longest) return -1;
    for (int i = 0; i < slots; ++i) {
        if (used[i]) continue;
        std::memcpy(paths[i], path.c_str(), path.size() + 1);
        used[i] = 1;
        return i;
    }
    return -1;
}

void keep_on_signal(int slot) {
    if (slot >= 0 && slot < slots) used[slot] = 0;
}

}  // namespace mha
