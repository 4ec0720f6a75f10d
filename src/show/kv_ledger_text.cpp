// The KV cache ledger in words and tables.

#include "show/kv_ledger_text.h"

#include <algorithm>
#include <sstream>

#include "core/checked.h"
#include "show/format.h"
#include "show/text_layout.h"

namespace mha {

namespace {

using Table = std::vector<std::vector<std::string>>;  // rows of cells, the header first

// The table's lines: the first column left-aligned, the others right-aligned, two spaces apart.
std::vector<std::string> table_lines(const Table& table) {
    std::vector<std::size_t> width(table.front().size(), 0);
    for (const std::vector<std::string>& row : table)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
    std::vector<std::string> lines;
    for (const std::vector<std::string>& row : table) {
        std::string line = padded_right(row[0], width[0]);
        for (std::size_t i = 1; i < row.size(); ++i) line += "  " + padded_left(row[i], width[i]);
        lines.push_back(line);
    }
    return lines;
}

// A paragraph filled into 80 columns, as lines.
std::vector<std::string> filled(const std::string& text) {
    std::ostringstream out;
    write_filled(out, words_keeping_sizes(text), " ", "", "");
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// "8x128", "4x256, last 4096", "latent 512+64".
std::string cache_cell(const KvLedgerRow& row) {
    const std::string what = row.latent ? "latent " + std::to_string(row.latent) + "+" +
                                              std::to_string(row.rope)
                                        : std::to_string(row.kv_heads) + "x" +
                                              std::to_string(row.head_dim);
    return what + (row.window ? ", last " + std::to_string(row.window) : "");
}

// "32 layers", or beside local layers "13 local" and "13 global".
std::string layers_cell(const KvLedger& k, const KvLedgerRow& row) {
    const bool any_local = std::any_of(k.rows.begin(), k.rows.end(),
                                       [](const KvLedgerRow& r) { return r.window > 0; });
    const std::string kind = row.window ? " local" : any_local ? " global" : " layers";
    return std::to_string(row.layers.size()) + kind;
}

Table bytes_table(const KvLedger& k) {
    Table table{{"layers", k.mha_per_token ? "caches" : "K,V G x d_k", "a token", "float32 at T"}};
    if (k.quantised) {
        table[0].push_back("int8 at T");
        table[0].push_back("int4 at T");
    }
    for (const KvLedgerRow& row : k.rows) {
        table.push_back({layers_cell(k, row), cache_cell(row), with_commas(row.per_token),
                         with_commas(row.float32)});
        if (k.quantised) {
            table.back().push_back(with_commas(row.int8));
            table.back().push_back(with_commas(row.int4));
        }
    }
    table.push_back({"all " + std::to_string(k.layers), "", with_commas(k.per_token),
                     with_commas(k.total.float32)});
    if (k.quantised) {
        table.back().push_back(with_commas(k.total.int8));
        table.back().push_back(with_commas(k.total.int4));
    }
    return table;
}

Table paged_table(const KvLedger& k) {
    Table table{{"layers", "blocks", "paged bytes", "unused in the last block"}};
    for (const KvLedgerRow& row : k.rows) {
        table.push_back({layers_cell(k, row), with_commas(row.blocks), with_commas(row.paged),
                         with_commas(row.unused)});
    }
    table.push_back({"all " + std::to_string(k.layers), "", with_commas(k.total.paged),
                     with_commas(k.total.paged - k.total.float32)});
    return table;
}

// Local layers: how many positions they hold at T.
std::string local_words(const KvLedger& k) {
    std::string text;
    for (const KvLedgerRow& row : k.rows) {
        if (!row.window) continue;
        text += (text.empty() ? "" : " ") + std::string("Local layers (") +
                layer_list(row.layers) + ") keep the last " + std::to_string(row.window) +
                " tokens: at T = " + std::to_string(k.length) + " each holds " +
                std::to_string(row.cached) + ".";
    }
    return text;
}

std::string mla_words(const KvLedger& k) {
    const KvLedgerRow& row = k.rows.front();
    const double ratio = double(k.mha_per_token) / double(row.per_token);
    return "MLA caches per token and layer the latent c_KV (d_c = " + std::to_string(row.latent) +
           ") and the RoPE key k_R (d_R = " + std::to_string(row.rope) + "), " +
           std::to_string(row.head_dim) + " floats shared by all " + std::to_string(k.mha_heads) +
           " heads: " + with_commas(row.per_token) + " bytes, where MHA with the same heads "
           "would cache K and V, 2·" + std::to_string(k.mha_heads) + "·" +
           std::to_string(k.mha_head_dim) + " floats: " + with_commas(k.mha_per_token) +
           " bytes (" + fixed(ratio, 1) + " times as much).";
}

std::string fits_words(const KvLedger& k) {
    std::string text = "Sequences of T whose cache fits --max-memory " + byte_size(k.max_memory) +
                       ": " + with_commas(k.fits.float32) + " in float32";
    if (k.quantised)
        text += ", " + with_commas(k.fits.int8) + " in int8, " + with_commas(k.fits.int4) + " in int4";
    if (k.block_size) text += ", " + with_commas(k.fits.paged) + " paged";
    return text + " (the cache alone).";
}

void append(std::vector<std::string>& lines, const std::vector<std::string>& more) {
    lines.insert(lines.end(), more.begin(), more.end());
}

}  // namespace

std::string layer_list(const std::vector<std::size_t>& layers) {
    const std::size_t n = layers.size();
    if (n >= 4) {
        const std::size_t step = layers[1] - layers[0];
        bool even = step > 1;
        for (std::size_t i = 2; i < n && even; ++i) even = layers[i] - layers[i - 1] == step;
        if (even) {
            return std::to_string(layers[0]) + ", " + std::to_string(layers[1]) + ", ..., " +
                   std::to_string(layers[n - 1]);
        }
    }
    std::string text;
    for (std::size_t i = 0; i < n;) {
        std::size_t j = i;
        while (j + 1 < n && layers[j + 1] == layers[j] + 1) ++j;
        text += (text.empty() ? "" : ", ") + std::to_string(layers[i]) +
                (j > i ? "-" + std::to_string(layers[j]) : "");
        i = j + 1;
    }
    return text;
}

std::vector<std::string> kv_ledger_lines(const KvLedger& k) {
    std::vector<std::string> lines = filled(
        "KV cache ledger of " + k.model + " at T = " + std::to_string(k.length) + " (context " +
        std::to_string(k.context) + "), one sequence, in bytes of float32 (4 a number; bf16 or "
        "fp16 would be half), a layer and for all layers:");
    append(lines, table_lines(bytes_table(k)));
    append(lines, filled("The model: " + byte_size(k.per_token) + " a token; at T " +
                         byte_size(k.total.float32) + " in float32" +
                         (k.quantised ? ", " + byte_size(k.total.int8) + " in int8, " +
                                            byte_size(k.total.int4) + " in int4."
                                      : ".")));
    if (!local_words(k).empty()) append(lines, filled(local_words(k)));
    if (k.mha_per_token) append(lines, filled(mla_words(k)));
    append(lines, filled(k.quant_note + "."));
    if (k.block_size) {
        append(lines, filled("Paged in blocks of " + std::to_string(k.block_size) +
                             " positions (float32): whole blocks a layer, and the bytes the "
                             "last block leaves unused (internal fragmentation):"));
        append(lines, table_lines(paged_table(k)));
    }
    append(lines, filled(fits_words(k)));
    return lines;
}

}  // namespace mha
