// The paged KV cache's memory picture: the pool's blocks slot by slot, the block tables beside.

#include "show/kv_pool_picture.h"
#include "show/text_layout.h"

#include <algorithm>
#include <string>
#include <vector>

namespace mha {

namespace {

constexpr const char* free_colour = "#ffffff";
constexpr const char* mark_colour = "#000000";
constexpr const char* line_colour = "#b0b0b0";
constexpr int pool_margin = 10, line_height = 16;    // px; a line of text
constexpr int strip_height = 18, block_gap = 14;     // a block's strip of slots, space between
constexpr int table_cell_width = 30, table_cell_height = 22;  // a block table's cell
constexpr int label_width = 56;                      // "seq 12" before a table's row
constexpr int max_pool_width = 640;                  // px the pool's grid may take
constexpr int min_block_width = 112;                 // px: room for "block 12 · seq 3"

// Okabe and Ito's colours, told apart with colour-blindness; a sequence past eight reuses
// one, and its number in the table tells it apart.
std::string sequence_colour(std::size_t sequence) {
    static const char* const colours[] = {"#e69f00", "#56b4e9", "#009e73", "#f0e442",
                                          "#0072b2", "#d55e00", "#cc79a7", "#999999"};
    return colours[sequence % 8];
}

// The sequence owning each physical block and its logical index there; free blocks: none.
struct Owner {
    bool owned = false;
    std::size_t sequence = 0, entry = 0;
};

std::vector<Owner> owners(const PagedFacts& p) {
    std::vector<Owner> of(p.pool_blocks);
    for (std::size_t b = 0; b < p.tables.size(); ++b) {
        for (std::size_t j = 0; j < p.tables[b].size(); ++j)
            of[p.tables[b][j]] = {true, b, j};
    }
    return of;
}

std::string rect(double x, double y, double w, double h, const std::string& fill,
                 const std::string& stroke, double stroke_width) {
    return "<rect x=\"" + std::to_string(int(x)) + "\" y=\"" + std::to_string(int(y)) +
           "\" width=\"" + std::to_string(int(w)) + "\" height=\"" + std::to_string(int(h)) +
           "\" fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"" +
           std::to_string(int(stroke_width)) + "\"/>";
}

std::string text(double x, double y, const std::string& words, const char* anchor = "start") {
    return "<text x=\"" + std::to_string(int(x)) + "\" y=\"" + std::to_string(int(y)) +
           "\" text-anchor=\"" + anchor + "\">" + words + "</text>";
}

// Px a line of 12 px text takes, about: 7 a character.
int text_width(const std::string& words) { return 7 * int(display_width(words)); }

// Geometry of the pool's grid: slot width, a block's cell (its strip of slots and its label),
// blocks a row.
struct PoolGrid {
    int slot = 0, block = 0;
    std::size_t columns = 1;
    int width() const { return int(columns) * (block + block_gap); }
    int x(std::size_t index) const {
        return pool_margin + int(index % columns) * (block + block_gap);
    }
    int y(std::size_t index) const {  // the strip's top; its label sits above it
        return pool_margin + 2 * line_height +
               int(index / columns) * (strip_height + line_height + block_gap);
    }
};

PoolGrid pool_grid(const PagedFacts& p) {
    PoolGrid g;
    g.slot = std::clamp(int(112 / std::max<std::size_t>(p.block_size, 1)), 3, 28);
    g.block = std::max(g.slot * int(p.block_size), min_block_width);
    g.columns = std::max<std::size_t>(
        1, std::min<std::size_t>(p.pool_blocks, std::size_t(max_pool_width / (g.block + block_gap))));
    return g;
}

// Block `index` of the pool: its label, its slots (written: filled with the owner's colour;
// allocated, unwritten: outlined in it; free: blank), the traced block and slot outlined.
std::string pool_block(const PagedFacts& p, const PoolGrid& g, std::size_t index,
                       const Owner& owner, const PagedPosition& traced) {
    const int x = g.x(index), y = g.y(index);
    std::string svg = text(x, y - 6, "block " + std::to_string(index) +
                                         (owner.owned ? " · seq " + std::to_string(owner.sequence)
                                                      : " · free"));
    const std::string colour = owner.owned ? sequence_colour(owner.sequence) : free_colour;
    for (std::size_t s = 0; s < p.block_size; ++s) {
        const bool written = owner.owned && owner.entry * p.block_size + s < p.held;
        svg += rect(x + int(s) * g.slot, y, g.slot, strip_height, written ? colour : free_colour,
                    owner.owned ? colour : line_colour, 1);
    }
    if (index == traced.block) {
        svg += rect(x, y, g.slot * int(p.block_size), strip_height, "none", mark_colour, 2);
        svg += rect(x + int(traced.slot) * g.slot, y - 3, g.slot, strip_height + 6, "none",
                    mark_colour, 3);
    }
    return svg + "\n";
}

// Sequence b's block table as a row of cells, logical entry j holding its physical block.
std::string table_row(const PagedFacts& p, std::size_t b, int x, int y,
                      const PagedPosition& traced) {
    std::string svg = text(x, y + 15, "seq " + std::to_string(b));
    for (std::size_t j = 0; j < p.tables[b].size(); ++j) {
        const int cx = x + label_width + int(j) * table_cell_width;
        const bool marked = b == 0 && j == traced.entry;
        svg += rect(cx, y, table_cell_width, table_cell_height, sequence_colour(b),
                    marked ? mark_colour : "#ffffff", marked ? 3 : 1);
        svg += text(cx + table_cell_width / 2, y + 15, std::to_string(p.tables[b][j]), "middle");
    }
    return svg + "\n";
}

}  // namespace

bool pool_pictured(const PagedFacts& paged) {
    return !paged.positions.empty() && !paged.tables.empty() &&
           paged.pool_blocks * paged.block_size <= max_pictured_slots;
}

void write_kv_pool_svg(std::ostream& out, const PagedFacts& p) {
    const PagedPosition& traced = p.positions.back();
    const PoolGrid grid = pool_grid(p);
    const std::size_t rows = (p.pool_blocks + grid.columns - 1) / grid.columns;
    const int tables_x = pool_margin + grid.width() + 2 * block_gap;
    std::size_t entries = 0;
    for (const auto& table : p.tables) entries = std::max(entries, table.size());
    const std::string pool_title = "block pool: " + std::to_string(p.pool_blocks) +
                                   " physical blocks of S = " + std::to_string(p.block_size) +
                                   " slots";
    const std::string tables_title = "block tables: logical block → physical block";
    const std::string t = std::to_string(traced.position), S = std::to_string(p.block_size);
    const std::string traced_line =
        "outlined: position t = " + t + " of sequence 0, block_table[0][" + t + " // " + S +
        "] = block " + std::to_string(traced.block) + ", slot " + t + " % " + S + " = " +
        std::to_string(traced.slot);
    const std::string legend_line =
        "filled: written; outlined in colour: allocated, not written yet (internal "
        "fragmentation); outlined in grey: free";
    const int width = std::max({tables_x + std::max(label_width + int(entries) * table_cell_width,
                                                    text_width(tables_title)),
                                text_width(traced_line), text_width(legend_line)}) +
                      pool_margin;
    const int pool_bottom = grid.y(rows * grid.columns) - line_height;
    const int tables_bottom =
        pool_margin + 2 * line_height + int(p.tables.size()) * (table_cell_height + 6);
    const int height = std::max(pool_bottom, tables_bottom) + 3 * line_height + pool_margin;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" viewBox=\"0 0 " << width << " " << height
        << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\" "
           "fill=\"#222222\">\n"
        << rect(0, 0, width, height, "#ffffff", "#ffffff", 0) << "\n"
        << text(pool_margin, pool_margin + line_height - 4, pool_title)
        << text(tables_x, pool_margin + line_height - 4, tables_title) << "\n";
    const std::vector<Owner> of = owners(p);
    for (std::size_t index = 0; index < p.pool_blocks; ++index)
        out << pool_block(p, grid, index, of[index], traced);
    for (std::size_t j = 0; j < entries; ++j)
        out << text(tables_x + label_width + int(j) * table_cell_width + table_cell_width / 2,
                    pool_margin + 2 * line_height - 4, std::to_string(j), "middle");
    for (std::size_t b = 0; b < p.tables.size(); ++b)
        out << table_row(p, b, tables_x,
                         pool_margin + 2 * line_height + int(b) * (table_cell_height + 6), traced);
    const int below = std::max(pool_bottom, tables_bottom) + line_height;
    out << text(pool_margin, below, traced_line) << "\n"
        << text(pool_margin, below + line_height, legend_line) << "\n</svg>\n";
}

}  // namespace mha
