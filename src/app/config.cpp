// The rules between options: which combinations make sense.

#include "app/config.h"

#include "core/error.h"

namespace mha {

namespace {

// --text, --demo-heads and the views that read the finished weights.
void check_views(const Config& c) {
    if (c.text && !c.input_path.empty()) {
        throw Error("--text makes the input from a sentence; it cannot be combined with --input");
    }
    if (c.demo_heads && !c.text) {
        throw Error("--demo-heads needs --text: its heads read the token embeddings and "
                    "positional encodings that --text builds");
    }
    if (c.demo_heads && c.kv_heads && *c.kv_heads != c.heads) {
        throw Error("--demo-heads constructs four full heads; it cannot be combined with --kv-heads");
    }
    if (c.demo_heads && !c.weights_path.empty()) {
        throw Error("--demo-heads constructs the weights; it cannot be combined with --weights");
    }
    if ((!c.view_heads.empty() || c.mean_view) && !c.heatmap && c.svg_path.empty()) {
        throw Error("--head picks what --heatmap and --export-svg draw; give one of them too");
    }
    if (c.format != Format::Text && (wants_summary(c) || c.ablate_head)) {
        throw Error("--heatmap, --summary, --no-scale and --ablate-head print text; "
                    "use them with --format text");
    }
}

}  // namespace

void validate(const Config& c) {
    if (c.key_path.empty() != c.value_path.empty()) {
        throw Error("--key and --value go together: give both for cross-attention, or neither");
    }
    if (!c.key_path.empty() && c.input_path.empty()) {
        throw Error("--key and --value need --input for the queries");
    }
    if (!c.weights_path.empty() && (!c.bias || c.random_bias)) {
        throw Error(std::string(c.bias ? "--random-bias" : "--no-bias") +
                    " applies to seeded weights; with --weights the state dict decides the bias");
    }
    if (!c.bias && c.random_bias) {
        throw Error("--no-bias and --random-bias contradict each other; choose one");
    }
    check_views(c);
    if (c.step && c.format != Format::Text) {
        throw Error("--step pauses the text trace; it does not combine with --format json or markdown");
    }
    if (c.shapes_only && !(c.weights_path.empty() && c.input_path.empty() &&
                           c.mask_path.empty() && c.key_padding_mask_path.empty() &&
                           c.save_path.empty() && !c.values)) {
        throw Error("--shapes-only traces sizes without any numbers; it cannot be combined "
                    "with --weights, --input, --mask, --key-padding-mask, --save or --values");
    }
    if (c.shapes_only && (c.text || wants_summary(c) || c.ablate_head || !c.svg_path.empty())) {
        throw Error("--shapes-only computes no weights to look at; it cannot be combined with "
                    "--text, --heatmap, --summary, --export-svg, --ablate-head or --no-scale");
    }
    if (c.attention == AttentionPath::Streaming && !c.save_path.empty()) {
        throw Error("--save writes the attention weights, which --attention streaming never "
                    "stores; use --attention standard or auto");
    }
    if (c.attention == AttentionPath::Streaming && (wants_summary(c) || !c.svg_path.empty())) {
        throw Error("--heatmap, --summary, --no-scale and --export-svg read the attention "
                    "weights, which --attention streaming never stores; use standard or auto");
    }
    if (c.add_zero_attn && (c.causal || c.shapes_only)) {
        throw Error(std::string(c.causal ? "--causal has no rule for the zero key and value "
                                           "--add-zero-attn appends; give the causal mask as "
                                           "--mask, which is padded as PyTorch pads it"
                                         : "--shapes-only traces the plain pass; it cannot be "
                                           "combined with --add-zero-attn"));
    }
    if (c.seq_first && c.input_path.empty()) {
        throw Error("--seq-first says the --input, --key and --value files are (length, B, "
                    "features); it needs --input");
    }
    if (c.mask_means && c.mask_path.empty()) {
        throw Error("--mask-means says how to read --mask, but no --mask was given");
    }
}

}  // namespace mha
