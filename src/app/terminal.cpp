// Terminal facts from the environment, isatty and the TIOCGWINSZ ioctl.

#include "app/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace mha {

namespace {

constexpr std::size_t fallback_width = 80;

bool set(const char* variable) { return variable != nullptr && variable[0] != '\0'; }

}  // namespace

Shading choose_shading(ColorChoice choice, bool stdout_is_terminal, const char* no_color,
                       const char* colorterm) {
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

}  // namespace mha
