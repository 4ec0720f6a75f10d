#pragma once
// Config: everything the command line asked for, parsed and validated.

#include "core/forms/block.h"
#include "core/ops/masks.h"
#include "core/pass/attention.h"
#include "core/pass/form.h"
#include "core/position/rope.h"
#include "io/masks.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mha {

enum class Format { Text, Json, Markdown, Html };
// --color: auto, always or never colour; 256 and truecolor force colour at that depth.
enum class ColorChoice { Auto, Always, Never, Force256, ForceTrueColour };
// What --form and the four form options ask for: a Form of steps 6-10, or the block
// (which wraps the packed form).
enum class FormChoice { Packed, FusedQkv, PerHead, Decode, Block, Mla };
// --kv-quant-axis: the quantised cache's groups along d_k, along the tokens, or KIVI's mix.
enum class KvQuantAxisChoice { Token, Channel, Kivi };

// The options of steps 7-9: which keys step 8 biases or hides, how step 7 scales and caps the
// scores, what step 9 normalises with. To add one: its row in cli.cpp's table, a field here, a
// line in given() and, if the pass reads it from Masks, a line in apply(). The rules that take
// or refuse the score options as a group (--model) then know it. --no-scale, which skips
// step 7 to show what the scale does, is a view (Config::no_scale).
struct ScoreOptions {
    bool alibi = false;                // --alibi: step 8 adds −m_i·|p − j|
    std::size_t window = 0;            // --window W; 0: none
    std::optional<std::size_t> sinks;  // --sink-tokens S (needs --window)
    std::optional<double> softcap;     // --softcap C: step 7 ends with C·tanh(scores / C)
    std::optional<double> scale_base;  // --scale-base S: step 7 divides by sqrt(S)

    // The options set, on the command line or by --preset, by their flags in --help order:
    // {"--window", "--softcap"}.
    std::vector<std::string> given() const {
        std::vector<std::string> flags;
        const auto add = [&flags](bool is_given, const char* flag) {
            if (is_given) flags.push_back(flag);
        };
        add(alibi, "--alibi");
        add(window > 0, "--window");
        add(sinks.has_value(), "--sink-tokens");
        add(softcap.has_value(), "--softcap");
        add(scale_base.has_value(), "--scale-base");
        return flags;
    }

    // Sets what steps 7-9 read from masks (the pass's options take scale_base).
    void apply(Masks& masks) const {
        masks.softcap = softcap.value_or(0.0);
        masks.alibi = alibi;
        masks.window = window;
        masks.sinks = sinks.value_or(0);
    }
};

struct Config {
    // Sizes left unset come from the files (when given) or the defaults below.
    std::optional<std::size_t> batch;     // B        default 2
    std::optional<std::size_t> seq_len;   // N        default 8
    std::optional<std::size_t> kv_len;    // M        default N (self-attention)
    std::optional<std::size_t> d_model;   //          default 256
    std::optional<std::size_t> heads;     // h        default 4 (a state dict cannot say h)
    bool seq_first = false;               // --seq-first: input files are (L, B, features)
    std::optional<std::size_t> kv_heads;  // G   default h (from the weights when loaded)
    std::optional<std::size_t> head_dim;  // d_k default d_model / h (from W_q when loaded)
    std::uint64_t seed = 0;
    std::size_t threads = 0;  // 0: the hardware's
    bool causal = false;
    CausalAlign causal_align = CausalAlign::BottomRight;  // --causal=top-left|bottom-right
    bool add_zero_attn = false;  // --add-zero-attn: nn.MultiheadAttention's add_zero_attn
    bool bias = true;
    bool random_bias = false;
    bool trace = false;
    bool values = false;
    bool step = false;  // --step: the trace, pausing after each step on a terminal
    Format format = Format::Text;
    bool explain = false;     // --explain: a paragraph on what each step does and why
    std::string output_path;  // --output: the file --format html writes

    std::string weights_path, input_path, key_path, value_path;
    std::string weights_prefix;  // --weights-prefix P: read only the arrays named P..., without P
    std::string mask_path, key_padding_mask_path, save_path;
    bool backward = false;         // --backward: the gradients of L = Σ output ∘ dO too
    std::string grad_output_path;  // --grad-output: dO (output's shape and layout); "": seeded
    std::optional<MaskMeaning> mask_means;
    bool zero_masked_rows = false;
    std::optional<AttentionPath> attention;  // unset: auto, chosen in build_problem
    std::optional<std::size_t> flash_row;    // --flash-row I: step 10's online softmax of row I
    std::uint64_t max_memory = std::uint64_t(2) << 30;
    std::optional<double> max_time = 60.0;  // --max-time S: refuse longer estimates; unset: off

    // Seeing attention: text input, demo heads, heatmaps and their numbers.
    std::optional<std::string> text;  // --text: the sentence to attend over
    std::string text_file;    // --text-file FILE: --text read from a file (settle reads it)
    bool no_special = false;  // --no-special: --checkpoint --text without the tokenizer's BOS
    bool demo_heads = false;          // constructed heads (needs --text; causal)
    bool heatmap = false;
    bool summary = false;                 // scale statistics and per-head patterns
    std::vector<std::size_t> view_heads;  // --head I: the heads to draw (default all)
    bool mean_view = false;               // --head mean: the mean over heads
    ColorChoice color = ColorChoice::Auto;
    bool auto_scale = false;  // --scale auto: each map spans its own min..max
    std::string svg_path;
    std::optional<std::size_t> ablate_head;
    bool no_scale = false;
    bool head_contributions = false;  // --head-contributions: each head's share of the output
    std::vector<std::size_t> compare_heads;  // --compare H1,H2,...: the layer at each head count

    std::string preset;        // --preset NAME: sizes of a known model (app/cli/presets.h)
    bool shapes_only = false;  // trace shapes and costs without computing or allocating
    bool list_presets = false;
    std::vector<FormChoice> forms;  // the forms asked for (--form and the four below), once each
    Form form = Form::Packed;       // decided after parsing (the block wraps Packed)
    bool mla_decode = false;        // --form mla with --decode: MLA's latent cache (settled)
    std::optional<std::size_t> decode;  // --decode T: T tokens, one at a time, with a KV cache
    std::vector<std::size_t> prefill_chunks;  // --prefill-chunks: the prompt in these chunks
    std::optional<std::size_t> draft;         // --draft K: the last K tokens a chain draft
    std::vector<std::ptrdiff_t> draft_tree;   // --draft-tree: the draft's parents (-1: the
                                              //  last cached token); --draft K fills a chain
    std::optional<std::size_t> draft_layers;  // --draft-layers L: --model's early-exit draft
    std::optional<std::size_t> kv_block_size;  // --kv-block-size S: the cache paged in blocks of S
    std::optional<std::uint64_t> kv_pool_seed;  // --kv-pool-seed N: the pool's blocks shuffled
    std::optional<unsigned> kv_quant;             // --kv-quant int8|int4: bits of a cached value
    std::optional<std::size_t> kv_quant_group;    // --kv-quant-group N: values sharing a scale
    std::optional<KvQuantAxisChoice> kv_quant_axis;  // --kv-quant-axis token|channel|kivi
    std::optional<std::size_t> kv_residual;       // --kv-residual R: the last R positions float
    std::optional<BlockKind> block;     // --block pre|post: the transformer block around attention
    std::optional<std::size_t> d_ff;    // the block's feed-forward width, default 4·d_model
    std::string model_path;             // --model FILE: a trained character model (needs --text)
    std::string checkpoint_path;        // --checkpoint DIR: a Hugging Face model folder
    std::optional<std::vector<std::size_t>> tokens;  // --tokens ID,...: its input as token ids
    std::string config_path;            // --config FILE: a config.json alone (--shapes-only)
    std::optional<std::size_t> layer;   // --layer L: the model layer the views show, or the
                                        // layer of an alternating --preset (gemma2-*)
    std::string layer_kind;             // that preset layer's kind, for the header

    // Modern attention (docs/variants.md): positions, locality and bounds of the scores.
    std::optional<RopeLayout> rope;    // --rope half|interleaved
    std::optional<double> rope_theta;  // --rope-theta T, default 10000
    ScoreOptions scores;               // steps 7-9: --alibi ... --scale-base
    bool qk_norm = false;
    std::optional<bool> gate;  // --gate elementwise|headwise: true head-wise; unset: no gate
    std::optional<std::size_t> latent_dim;  // --latent-dim: MLA's d_c, default 4·d_k
    std::optional<std::size_t> rope_dim;    // --rope-dim: MLA's d_R, default d_k/2 (even)

    bool gradcheck = false;  // --gradcheck: analytic gradients against finite differences

    bool help = false;
    bool version = false;
};

inline constexpr std::size_t default_batch = 2;
inline constexpr std::size_t default_seq_len = 8;
inline constexpr std::size_t default_d_model = 256;
inline constexpr std::size_t default_heads = 4;
inline constexpr std::size_t max_threads = 256;
inline constexpr std::size_t text_d_model = 256;  // --text without --d-model

// Whether the options place keys by position (RoPE, ALiBi, the window): a key appended without
// one (--add-zero-attn, a state dict's bias_k) cannot take them.
inline bool places_keys(const Config& c) { return c.rope || c.scores.alibi || c.scores.window > 0; }

// A run of a real checkpoint: --checkpoint DIR, or --config FILE for its sizes alone.
inline bool runs_checkpoint(const Config& c) {
    return !c.checkpoint_path.empty() || !c.config_path.empty();
}

// What the run prints after the report: heatmaps, the summary (also with --no-scale).
inline bool wants_summary(const Config& c) { return c.summary || c.heatmap || c.no_scale; }

// After parsing: throws mha::Error for the first rule of the rule table the options
// break (e.g. --key without --value), then decides what follows from them once: the
// form and the block, causal (--decode, --demo-heads), N = T for --decode T, and
// G = h without weights.
void settle(Config& config);

}  // namespace mha
