#pragma once
// What the terminal on stdout can show: its width and whether to colour.

#include "app/cli/config.h"
#include "show/heatmap.h"
#include "show/stepper.h"

#include <csignal>
#include <cstddef>
#include <string>

namespace mha {

// auto: colour only when stdout is a terminal and NO_COLOR is unset or empty.
// Colour is true colour when COLORTERM says truecolor or 24bit, else 256 colours.
Shading choose_shading(ColorChoice choice, bool stdout_is_terminal, const char* no_color,
                       const char* colorterm);

// TERM unset, empty or "dumb": a terminal that takes no escape sequences, so no colour and
// no live panel, as with NO_COLOR.
bool dumb_terminal(const char* term);

// stdout is a terminal that takes escape sequences (TERM not dumb).
bool stdout_takes_escapes();

// COLUMNS when it is a number, else the terminal's width, else 80.
std::size_t terminal_width(const char* columns_variable, bool stdout_is_terminal);

// The two above for this process's stdout and environment.
HeatmapStyle terminal_style(ColorChoice choice);

// --step's keys from the terminal on stdin, one key at a time without Enter: the terminal
// is put in raw mode (no line buffering, no echo; Ctrl-C still interrupts) and restored when
// this object goes, and on SIGINT, SIGTERM and SIGHUP before the signal ends the process.
// Ctrl-Z (SIGTSTP) restores it too before the process stops; SIGCONT (fg) sets raw mode
// again, and the wait for a key returns Key::Other, so the stepper draws its prompt again.
class TerminalKeys : public KeySource {
public:
    TerminalKeys();
    TerminalKeys(const TerminalKeys&) = delete;
    TerminalKeys& operator=(const TerminalKeys&) = delete;
    ~TerminalKeys() override;

    Key next_key() override;

private:
    bool raw_ = false;  // the terminal was switched (it may refuse)
};

// Inside a handler of a stop signal (SIGTSTP): the signal's action from before the handler was
// installed, `previous`, taken (the process stops there), and the handler installed again once
// the process goes on (fg).
void stop_as_before(int signal_number, const struct sigaction& previous);

// Standard output, flushed: a failed write (a full disk, a closed descriptor, a closed pipe
// with SIGPIPE ignored) is an error, not a silent success. Checked after large writes, and
// before a run writes its files, so a run that fails leaves none.
void check_stdout();

}  // namespace mha
