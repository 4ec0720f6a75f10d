// The backward's costs in words: the kept tensors, the multiply-adds, training's memory.

#include "show/training_text.h"

#include "core/checked.h"
#include "show/format.h"

#include <cctype>

namespace mha {

namespace {

// The bytes of the kept tensor `name`, 0 when none has that name.
std::uint64_t bytes_of(const std::vector<KeptTensor>& kept, const std::string& name) {
    for (const KeptTensor& t : kept) {
        if (t.name == name) return t.bytes;
    }
    return 0;
}

}  // namespace

std::vector<std::string> kept_pieces(const RunInfo& info) {
    if (info.kept.empty()) return {};
    std::vector<std::string> pieces = {"kept", "for", "the", "backward:"};
    for (std::size_t i = 0; i < info.kept.size(); ++i) {
        pieces.push_back(info.kept[i].name + " " + byte_size(info.kept[i].bytes) +
                         (i + 1 < info.kept.size() ? "," : ""));
    }
    pieces.push_back("(" + byte_size(kept_bytes(info.kept)) + ")");
    return pieces;
}

std::string kept_text(const RunInfo& info) {
    std::string text;
    for (const std::string& piece : kept_pieces(info)) text += (text.empty() ? "" : " ") + piece;
    return text;
}

std::string backward_macs_text(const RunInfo& info) {
    if (!info.backward) return "";
    const double ratio =
        info.macs.forward ? double(info.macs.backward) / double(info.macs.forward) : 0.0;
    return "backward " + fixed(ratio, 2) + "x the forward's multiply-adds: " +
           with_commas(info.macs.backward) + " vs " + with_commas(info.macs.forward);
}

std::string training_memory_text(const RunInfo& info) {
    if (info.kept.empty()) return "";
    const std::string kept = "training this layer at N = " + with_commas(info.seq_len) +
                             " keeps " + byte_size(kept_bytes(info.kept)) +
                             " of activations for the backward";
    const std::uint64_t p = bytes_of(info.kept, "P"), lse = bytes_of(info.kept, "lse");
    if (p > 0 && !info.kept_streaming.empty()) {
        return kept + " (P " + byte_size(p) + ": --attention streaming keeps " +
               byte_size(bytes_of(info.kept_streaming, "lse")) +
               " of row log-sum-exp instead)";
    }
    if (lse > 0) return kept + " (the row log-sum-exp " + byte_size(lse) + ", not P)";
    return kept;
}

std::string sentence(const std::string& text) {
    if (text.empty()) return text;
    return char(std::toupper(static_cast<unsigned char>(text[0]))) + text.substr(1) + ".";
}

}  // namespace mha
