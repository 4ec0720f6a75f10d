// The rules between mha's options, in one table, and what follows from the options.

#include "app/cli/config.h"

#include <algorithm>
#include <iterator>

#include "app/cli/rules.h"
#include "core/error.h"
#include "core/forms/draft.h"
#include "io/read_file.h"

namespace mha {

namespace {

bool asks(const Config& c, FormChoice form) {
    return std::find(c.forms.begin(), c.forms.end(), form) != c.forms.end();
}

bool draws(const Config& c) { return !c.view_heads.empty() || c.mean_view; }

// The views some form cannot give, each with the option that asks for it; every other view
// reads only the steps or the output, which every form has.
struct View {
    const char* option;
    bool (*wanted)(const Config&);
};
const View views[] = {
    {"--head-contributions", [](const Config& c) { return c.head_contributions; }},
    {"--format html", [](const Config& c) { return c.format == Format::Html; }},
    {"--flash-row", [](const Config& c) { return c.flash_row.has_value(); }},
    {"--heatmap", [](const Config& c) { return c.heatmap; }},
    {"--summary", [](const Config& c) { return c.summary; }},
    {"--no-scale", [](const Config& c) { return c.no_scale; }},
    {"--export-svg", [](const Config& c) { return !c.svg_path.empty(); }},
};
constexpr std::size_t view_count = std::size(views);

// What each form can show: a row per form that refuses a view (the packed and fused forms
// refuse none), and in each cell why the form refuses that view (nullptr: it gives it), in
// the order of views. The rule "form-view" refuses the run before any output.
struct FormViews {
    const char* form;  // as the command line asks for it
    bool (*asked)(const Config&);
    const char* refused[view_count];  // in the order of views
};

const std::vector<FormViews>& form_views() {
    constexpr const char* none = nullptr;
    constexpr const char* unstored =
        "it never stores the attention weights this option needs; use "
        "--attention standard or auto";
    static const std::vector<FormViews> table = {
        {"--decode",
         [](const Config& c) { return asks(c, FormChoice::Decode); },
         {"its output is made token by token, with no concat of the whole sequence to split", none,
          "it attends one query at a time; the flash row is the packed pass's", none, none, none,
          none}},
        {"--per-head",
         [](const Config& c) { return asks(c, FormChoice::PerHead); },
         {none, none, "each head runs its own step 10; the flash row is the packed pass's", none,
          none, none, none}},
        {"--block",
         [](const Config& c) { return asks(c, FormChoice::Block); },
         {"the block adds its feed-forward to the attention's output", none, none, none, none, none,
          none}},
        {"--model",
         [](const Config& c) { return !c.model_path.empty(); },
         {"the model's output is its last layer's logits, not one attention layer's output", none,
          none, none, none, none, none}},
        {"--checkpoint",
         [](const Config& c) { return runs_checkpoint(c); },
         {"the model's output is its last layer's logits, not one attention layer's output", none,
          none, none, none, none, none}},
        {"--attention streaming",
         [](const Config& c) { return c.attention == AttentionPath::Streaming; },
         {none, none, none, unstored, unstored, unstored, unstored}},
    };
    return table;
}

// "--decode does not give --head-contributions: ...", for the first view the run's form
// refuses; empty when it refuses none.
std::string refused_view(const Config& c) {
    for (const FormViews& row : form_views()) {
        if (!row.asked(c)) continue;
        for (std::size_t v = 0; v < view_count; ++v) {
            if (row.refused[v] != nullptr && views[v].wanted(c)) {
                return std::string(row.form) + " does not give " + views[v].option + ": " +
                       row.refused[v];
            }
        }
    }
    return "";
}

// --config FILE --shapes-only --decode T: the ledger of that model's KV cache at T.
bool config_ledger(const Config& c) {
    return !c.config_path.empty() && c.shapes_only && c.decode &&
           c.forms == std::vector<FormChoice>{FormChoice::Decode};
}

// --model decides the sizes, weights, bias, mask and form: any option that sets one of them
// (--config's ledger asks for --decode's form).
bool overrides_model(const Config& c) {
    return c.batch || c.seq_len || c.kv_len || c.d_model || c.heads || c.kv_heads ||
           c.seed != 0 || c.causal || !c.bias || c.random_bias || !c.weights_path.empty() ||
           !c.input_path.empty() || !c.key_path.empty() || !c.mask_path.empty() ||
           !c.key_padding_mask_path.empty() || c.mask_means || c.zero_masked_rows || c.attention ||
           c.demo_heads || c.ablate_head || c.no_scale || c.add_zero_attn || !c.preset.empty() ||
           (!c.forms.empty() && !config_ledger(c)) || c.d_ff || !c.compare_heads.empty();
}

// The options given that change what a trained layer computes, by their flags: RoPE, QK-norm,
// wider heads and every option of steps 7-9 (ScoreOptions::given). --model refuses them.
std::vector<std::string> untrained_options(const Config& c) {
    std::vector<std::string> flags;
    if (c.rope) flags.push_back("--rope");
    if (c.rope_theta) flags.push_back("--rope-theta");
    if (c.qk_norm) flags.push_back("--qk-norm");
    if (c.gate) flags.push_back("--gate");
    if (c.head_dim) flags.push_back("--head-dim");
    const std::vector<std::string> scores = c.scores.given();
    flags.insert(flags.end(), scores.begin(), scores.end());
    return flags;
}

// "--a", "--a or --b", "--a, --b or --c"
std::string either(const std::vector<std::string>& flags) {
    std::string text;
    for (std::size_t i = 0; i < flags.size(); ++i)
        text += (i == 0 ? "" : i + 1 == flags.size() ? " or " : ", ") + flags[i];
    return text;
}

// A message's {T} is the --decode count, {N} the --seq-len, {REFUSED_VIEW} the view the
// form refuses, {UNTRAINED} the options given that --model refuses, {MODEL} the option that
// names the model (--model or --checkpoint) and {UNITS} what its tokens are called.
std::string fill(const std::string& message, const Config& c) {
    std::string text = message;
    const auto put = [&text](const std::string& key, const std::string& value) {
        const std::size_t at = text.find(key);
        if (at != std::string::npos) text.replace(at, key.size(), value);
    };
    if (c.decode) put("{T}", std::to_string(*c.decode));
    if (c.seq_len) put("{N}", std::to_string(*c.seq_len));
    put("{REFUSED_VIEW}", refused_view(c));
    put("{UNTRAINED}", either(untrained_options(c)));
    put("{MODEL}", c.model_path.empty() ? "--checkpoint" : "--model");
    put("{UNITS}", c.model_path.empty() ? "tokens" : "characters");
    return text;
}

// Checked in order after parsing (and after --preset filled in its sizes); the first
// broken rule is the error. To add a rule: one row, named so it is easy to find.
const std::vector<Rule<Config>>& rules() {
    static const std::vector<Rule<Config>> table = {
        // The forms of the pass.
        {"one-form",
         [](const Config& c) {
             const bool mla_decode = c.forms.size() == 2 && asks(c, FormChoice::Mla) &&
                                     asks(c, FormChoice::Decode);
             return c.forms.size() > 1 && !mla_decode;
         },
         "--decode, --fused-qkv, --per-head, --block and --form mla are different forms of the "
         "pass; choose one (--form mla --decode T decodes MLA with its latent cache)"},
        {"mla-cache-options",
         [](const Config& c) {
             return asks(c, FormChoice::Mla) &&
                    (!c.prefill_chunks.empty() || c.draft || !c.draft_tree.empty() ||
                     c.kv_quant);
         },
         "--form mla caches its latent token by token with --decode T (paged with "
         "--kv-block-size); it does not take --prefill-chunks, --draft, --draft-tree or "
         "--kv-quant"},
        {"form-view", [](const Config& c) { return !refused_view(c).empty(); }, "{REFUSED_VIEW}"},
        {"mla-sizes-without-mla",
         [](const Config& c) { return (c.latent_dim || c.rope_dim) && !asks(c, FormChoice::Mla); },
         "--latent-dim and --rope-dim size the latent and the RoPE key of --form mla; give "
         "--form mla too"},
        {"mla-alone",
         [](const Config& c) {
             return asks(c, FormChoice::Mla) &&
                    (c.kv_len || !c.key_path.empty() ||
                     (c.kv_heads && *c.kv_heads != c.heads.value_or(default_heads)) ||
                     c.add_zero_attn || c.rope || c.scores.alibi || c.qk_norm || c.head_dim ||
                     c.demo_heads || c.random_bias || c.gate);
         },
         "--form mla is DeepSeek-V2's latent attention: self-attention whose keys and values "
         "are made from one cached latent (so no --kv-len, --key/--value, --kv-heads or "
         "--add-zero-attn), positioned by its own RoPE on the d_R part (so no --rope or "
         "--alibi; --rope-theta sets its base), with its own widths and no biases or "
         "norms of Q and K (so no --head-dim, --qk-norm, --random-bias or --demo-heads); its "
         "heads reach W_o through the absorbed latent, not a concat, so no --gate"},
        {"d-ff-without-block",
         [](const Config& c) { return c.d_ff && !asks(c, FormChoice::Block); },
         "--d-ff sets the feed-forward width of --block; give --block pre or post"},
        {"block-self-attention",
         [](const Config& c) {
             return asks(c, FormChoice::Block) && (c.kv_len || !c.key_path.empty());
         },
         "--block is self-attention: no --kv-len or --key/--value"},
        {"backward-forms",
         [](const Config& c) {
             return c.backward && !c.compare_heads.empty();
         },
         "--backward differentiates one attention layer in the packed, --fused-qkv, "
         "--per-head or --form mla form, a --block or a --model; it cannot be combined with "
         "--compare"},
        {"model-grad-output",
         [](const Config& c) { return !c.grad_output_path.empty() && !c.model_path.empty(); },
         "--backward on --model differentiates the cross-entropy of predicting each next "
         "character of --text; it takes no --grad-output"},
        {"decode-prefill",
         [](const Config& c) { return c.decode && !c.prefill_chunks.empty(); },
         "--decode T feeds the tokens one at a time and --prefill-chunks a chunk at a time; "
         "choose one (--prefill-chunks 1,1,1 is --decode 3)"},
        {"draft-and-tree", [](const Config& c) { return c.draft && !c.draft_tree.empty(); },
         "--draft K is the chain -1,0,...,K-2 of --draft-tree; give one of them"},
        {"draft-prefill",
         [](const Config& c) {
             return (c.draft || !c.draft_tree.empty()) && !c.prefill_chunks.empty();
         },
         "--draft and --draft-tree verify the last tokens of --decode T; they cannot be combined "
         "with --prefill-chunks"},
        {"draft-layers-alone",
         [](const Config& c) {
             return c.draft_layers &&
                    ((c.model_path.empty() && c.checkpoint_path.empty()) || !c.draft);
         },
         "--draft-layers L makes the first L layers of --model or --checkpoint the draft of "
         "--draft K; give one of them and --draft too"},
        {"model-draft",
         [](const Config& c) {
             return (!c.model_path.empty() || !c.checkpoint_path.empty()) &&
                    (!c.draft_tree.empty() || (c.draft && !c.draft_layers));
         },
         "--draft K on {MODEL} drafts with the model's first layers: give --draft-layers L "
         "(--draft-tree is for --decode)"},
        {"model-draft-views",
         [](const Config& c) {
             return c.draft_layers && (c.format != Format::Text || c.shapes_only || c.backward);
         },
         "--draft-layers prints which drafted {UNITS} the model accepts as text; it cannot "
         "be combined with --format, --shapes-only or --backward"},
        {"draft-without-decode",
         [](const Config& c) {
             return (c.draft || !c.draft_tree.empty()) && !asks(c, FormChoice::Decode) &&
                    c.model_path.empty() && c.checkpoint_path.empty();
         },
         "--draft and --draft-tree verify the last K tokens of a causal decode; give --decode T "
         "too"},
        {"draft-paged",
         [](const Config& c) {
             return (c.draft || !c.draft_tree.empty()) && c.kv_block_size.has_value();
         },
         "--draft and --draft-tree verify against a contiguous cache; they cannot be combined "
         "with --kv-block-size"},
        {"draft-quantised",
         [](const Config& c) { return (c.draft || !c.draft_tree.empty()) && c.kv_quant; },
         "--draft and --draft-tree verify against a float cache; they cannot be combined with "
         "--kv-quant"},
        {"kv-block-size-without-cache",
         [](const Config& c) { return c.kv_block_size && !asks(c, FormChoice::Decode); },
         "--kv-block-size pages the KV cache, and only --decode T or --prefill-chunks keep one; "
         "give one of them"},
        {"kv-pool-seed-without-block-size",
         [](const Config& c) { return c.kv_pool_seed && !c.kv_block_size; },
         "--kv-pool-seed shuffles the blocks of a paged KV cache; give --kv-block-size S too"},
        {"kv-quant-options-without-kv-quant",
         [](const Config& c) {
             return !c.kv_quant && (c.kv_quant_group || c.kv_quant_axis || c.kv_residual);
         },
         "--kv-quant-group, --kv-quant-axis and --kv-residual shape the quantised cache of "
         "--kv-quant; give --kv-quant int8 or int4 too"},
        {"kv-quant-without-cache",
         [](const Config& c) {
             return c.kv_quant && (!asks(c, FormChoice::Decode) || !c.prefill_chunks.empty());
         },
         "--kv-quant quantises the KV cache of --decode T (token by token); give --decode "
         "(--prefill-chunks does not take it)"},
        {"kv-quant-with-paging", [](const Config& c) { return c.kv_quant && c.kv_block_size; },
         "--kv-quant and --kv-block-size do not go together yet: the quantised cache is "
         "contiguous; leave out one of them"},
        {"backward-decode",
         [](const Config& c) { return c.backward && asks(c, FormChoice::Decode); },
         "--backward does not run on --decode: decoding with a KV cache computes the same "
         "function as the causal packed pass, so its gradients are that pass's; run --causal "
         "without --decode"},
        {"grad-output-shapes-only",
         [](const Config& c) { return !c.grad_output_path.empty() && c.shapes_only; },
         "--shapes-only plans the backward from sizes alone (give --backward); it cannot be "
         "combined with --grad-output, whose numbers it would not read"},
        {"decode-seq-len",
         [](const Config& c) { return c.decode && c.seq_len && *c.seq_len != *c.decode; },
         "--decode {T} and --seq-len {N} disagree; --decode T decodes N = T tokens"},

        // --gradcheck: the packed pass in double, its own table.
        {"gradcheck-form",
         [](const Config& c) {
             return c.gradcheck && ((!c.forms.empty() && c.forms.front() != FormChoice::Packed) ||
                                    !c.model_path.empty() || !c.compare_heads.empty());
         },
         "--gradcheck differentiates the packed pass; it cannot be combined with --form "
         "fused-qkv|per-head|decode|block|mla (or --fused-qkv, --per-head, --decode, --block), "
         "--model or --compare"},
        {"gradcheck-streaming",
         [](const Config& c) {
             return c.gradcheck && (c.attention == AttentionPath::Streaming || c.flash_row);
         },
         "--gradcheck checks the double-precision reference, which stores the weights; it "
         "cannot be combined with --attention streaming or --flash-row"},
        {"gradcheck-views",
         [](const Config& c) {
             return c.gradcheck &&
                    (c.backward || c.trace || c.format != Format::Text || !c.save_path.empty() ||
                     c.heatmap || c.summary || !c.svg_path.empty() || c.head_contributions);
         },
         "--gradcheck prints its own table; it cannot be combined with --backward, "
         "--grad-output, --trace, --values, "
         "--step, --shapes-only, --format, --save, --heatmap, --summary, --export-svg or "
         "--head-contributions"},

        // Inputs and weights.
        {"key-without-value",
         [](const Config& c) { return c.key_path.empty() != c.value_path.empty(); },
         "--key and --value go together: give both for cross-attention, or neither"},
        {"key-without-input",
         [](const Config& c) { return !c.key_path.empty() && c.input_path.empty(); },
         "--key and --value need --input for the queries"},
        {"prefix-without-weights",
         [](const Config& c) { return !c.weights_prefix.empty() && c.weights_path.empty(); },
         "--weights-prefix picks arrays of --weights; give --weights too"},
        {"no-bias-with-weights", [](const Config& c) { return !c.weights_path.empty() && !c.bias; },
         "--no-bias applies to seeded weights; with --weights the state dict decides the bias"},
        {"random-bias-with-weights",
         [](const Config& c) { return !c.weights_path.empty() && c.random_bias; },
         "--random-bias applies to seeded weights; with --weights the state dict decides the bias"},
        {"scale-base-no-scale", [](const Config& c) { return c.scores.scale_base && c.no_scale; },
         "--scale-base sets what step 7 divides by and --no-scale skips step 7; choose one"},
        {"no-bias-random-bias", [](const Config& c) { return !c.bias && c.random_bias; },
         "--no-bias and --random-bias contradict each other; choose one"},

        // --text, --demo-heads and the views that read the finished weights.
        {"text-with-input", [](const Config& c) { return c.text && !c.input_path.empty(); },
         "--text makes the input from a sentence; it cannot be combined with --input"},
        {"demo-heads-without-text", [](const Config& c) { return c.demo_heads && !c.text; },
         "--demo-heads needs --text: its heads read the token embeddings and positional "
         "encodings that --text builds"},
        {"demo-heads-kv-heads",
         [](const Config& c) {
             return c.demo_heads && c.kv_heads && *c.kv_heads != c.heads.value_or(default_heads);
         },
         "--demo-heads constructs four full heads; it cannot be combined with --kv-heads"},
        {"demo-heads-head-dim", [](const Config& c) { return c.demo_heads && c.head_dim; },
         "--demo-heads constructs heads of d_k = d_model / h; it cannot be combined with "
         "--head-dim"},
        {"demo-heads-weights",
         [](const Config& c) { return c.demo_heads && !c.weights_path.empty(); },
         "--demo-heads constructs the weights; it cannot be combined with --weights"},
        {"head-without-view",
         [](const Config& c) {
             return draws(c) && !c.heatmap && c.svg_path.empty() && c.format != Format::Html;
         },
         "--head picks what --heatmap, --export-svg and --format html draw; give one of them too"},
        {"views-need-text-format",
         [](const Config& c) {
             return c.format != Format::Text && (wants_summary(c) || c.ablate_head);
         },
         "--heatmap, --summary, --no-scale and --ablate-head print text; use them with "
         "--format text"},
        {"contributions-text-format",
         [](const Config& c) { return c.head_contributions && c.format != Format::Text; },
         "--head-contributions prints text; use it with --format text"},
        {"compare-alone",
         [](const Config& c) {
             return !c.compare_heads.empty() &&
                    (c.trace || c.format != Format::Text || !c.save_path.empty() ||
                     wants_summary(c) || c.ablate_head || c.head_contributions ||
                     !c.svg_path.empty() || !c.weights_path.empty() || c.kv_heads ||
                     !c.model_path.empty() || c.demo_heads || !c.forms.empty());
         },
         "--compare runs seeded layers side by side and prints one table; it takes the sizes, "
         "--text, --input, masks and modern options, but no trace, view, --save, --weights, "
         "--kv-heads or form"},
        {"step-needs-text-format",
         [](const Config& c) { return c.step && c.format != Format::Text; },
         "--step pauses the text trace; it does not combine with --format json, markdown or html"},
        {"html-needs-output",
         [](const Config& c) { return c.format == Format::Html && c.output_path.empty(); },
         "--format html writes a page to a file; name it with --output FILE"},
        {"output-without-html",
         [](const Config& c) { return !c.output_path.empty() && c.format != Format::Html; },
         "--output names the page --format html writes; give --format html too"},
        {"explain-without-steps",
         [](const Config& c) {
             return c.explain && !c.gradcheck &&
                    !((c.trace && c.format == Format::Text) || c.format == Format::Markdown ||
                      c.format == Format::Html);
         },
         "--explain adds a paragraph to every step of --trace, --step, --format markdown or "
         "--format html, or a derivation to --gradcheck; give one of them too"},
        {"scale-without-view",
         [](const Config& c) {
             return c.auto_scale && !c.heatmap && c.svg_path.empty() && c.format != Format::Html;
         },
         "--scale sets the colour scale of --heatmap, --export-svg and --format html; give one "
         "of them too"},

        // A trained model (--model) on --text.
        {"layer-without-model",
         [](const Config& c) {
             return c.layer && c.model_path.empty() && c.preset.empty() && !runs_checkpoint(c);
         },
         "--layer picks a layer of --model or --checkpoint, or a local or global layer of "
         "--preset gemma2-*; give one of them too"},
        // A real checkpoint (--checkpoint) on --tokens, or its config.json alone.
        {"checkpoint-and-model",
         [](const Config& c) {
             return !c.model_path.empty() + !c.checkpoint_path.empty() + !c.config_path.empty() > 1;
         },
         "--model, --checkpoint and --config each name the model to run; give one of them"},
        {"config-without-shapes-only",
         [](const Config& c) { return !c.config_path.empty() && !c.shapes_only; },
         "--config FILE has sizes and no weights; trace them with --shapes-only, or give the "
         "folder with --checkpoint DIR"},
        {"checkpoint-text-and-tokens",
         [](const Config& c) { return runs_checkpoint(c) && c.text && c.tokens; },
         "--text and --tokens both give --checkpoint its input; give one"},
        {"no-special-without-checkpoint-text",
         [](const Config& c) { return c.no_special && !(runs_checkpoint(c) && c.text); },
         "--no-special leaves the tokenizer's special tokens out of --checkpoint --text; give both"},
        {"checkpoint-without-tokens",
         [](const Config& c) { return !c.checkpoint_path.empty() && !c.tokens && !c.text; },
         "--checkpoint reads text through its tokenizer or token ids; give --text or --tokens "
         "ID,ID,..."},
        {"tokens-without-checkpoint",
         [](const Config& c) { return c.tokens && !runs_checkpoint(c); },
         "--tokens gives --checkpoint its input; give --checkpoint DIR too"},
        {"checkpoint-backward",
         [](const Config& c) { return runs_checkpoint(c) && c.backward && !c.shapes_only; },
         "--backward on a checkpoint gives, with --shapes-only, the memory training keeps; its "
         "gradients are not done yet"},
        {"checkpoint-modern",
         [](const Config& c) { return runs_checkpoint(c) && !untrained_options(c).empty(); },
         "--checkpoint computes its layers as config.json says; it cannot be combined with "
         "{UNTRAINED}"},
        {"checkpoint-alone",
         [](const Config& c) { return runs_checkpoint(c) && overrides_model(c); },
         "--checkpoint decides the sizes, weights, bias, mask and form; besides --tokens and "
         "--layer it takes only the options for output and views (see mha --help)"},
        {"model-without-text", [](const Config& c) { return !c.model_path.empty() && !c.text; },
         "--model reads characters; give them with --text \"...\""},
        {"model-modern",
         [](const Config& c) {
             return !c.model_path.empty() && c.preset.empty() && !untrained_options(c).empty();
         },
         "--model computes its layers as they were trained (learned positions, heads of "
         "d_model / h, softmax of scores / sqrt(d_k)); it cannot be combined with {UNTRAINED}"},
        {"model-alone", [](const Config& c) { return !c.model_path.empty() && overrides_model(c); },
         "--model decides the sizes, weights, bias, mask and form; besides --text and --layer "
         "it takes only the options for output and views (see mha --help)"},

        // --shapes-only computes nothing; --attention streaming keeps no weights.
        {"shapes-only-numbers",
         [](const Config& c) {
             return c.shapes_only &&
                    !(c.weights_path.empty() && c.input_path.empty() && c.mask_path.empty() &&
                      c.key_padding_mask_path.empty() && c.save_path.empty() && !c.values);
         },
         "--shapes-only traces sizes without any numbers; it cannot be combined with "
         "--weights, --input, --mask, --key-padding-mask, --save or --values"},
        {"shapes-only-views",
         [](const Config& c) {
             return c.shapes_only && ((c.text && c.model_path.empty()) || wants_summary(c) ||
                                      c.ablate_head || !c.svg_path.empty());
         },
         "--shapes-only computes no weights to look at; it cannot be combined with --text "
         "(except to give --model its characters), --heatmap, --summary, --export-svg, "
         "--ablate-head or --no-scale"},
        {"flash-row-streaming",
         [](const Config& c) { return c.flash_row && c.attention != AttentionPath::Streaming; },
         "--flash-row traces the online softmax of the streaming path; give --attention "
         "streaming too"},
        {"flash-row-shapes-only", [](const Config& c) { return c.flash_row && c.shapes_only; },
         "--flash-row traces a computed row of step 10; it cannot be combined with "
         "--shapes-only"},
        // Modern attention.
        {"sinks-without-window",
         [](const Config& c) { return c.scores.sinks && c.scores.window == 0; },
         "--sink-tokens keeps the first S keys visible inside a sliding window; give --window W "
         "too"},
        {"rope-theta-without-rope",
         [](const Config& c) { return c.rope_theta && !c.rope && !asks(c, FormChoice::Mla); },
         "--rope-theta sets the base of RoPE's angles; give --rope half|interleaved too"},
        {"window-top-left",
         [](const Config& c) {
             return c.scores.window > 0 && c.causal && c.causal_align == CausalAlign::TopLeft;
         },
         "--window is causal with the queries as the last N of the M positions; it cannot be "
         "combined with --causal=top-left"},
        {"zero-attn-positions", [](const Config& c) { return c.add_zero_attn && places_keys(c); },
         "--rope, --alibi and --window place keys by position; the zero key --add-zero-attn "
         "appends has none"},
        {"seq-first-without-input",
         [](const Config& c) { return c.seq_first && c.input_path.empty(); },
         "--seq-first says the --input, --key and --value files are (length, B, features); it "
         "needs --input"},
        {"zero-attn-shapes-only", [](const Config& c) { return c.add_zero_attn && c.shapes_only; },
         "--shapes-only traces the plain pass; it cannot be combined with --add-zero-attn"},
        {"zero-attn-forms",
         [](const Config& c) {
             return c.add_zero_attn &&
                    (asks(c, FormChoice::Decode) || asks(c, FormChoice::FusedQkv) ||
                     asks(c, FormChoice::PerHead) || asks(c, FormChoice::Block));
         },
         "--add-zero-attn appends to the packed pass's K and V; it cannot be combined with "
         "--decode, --fused-qkv, --per-head or --block"},
        {"mask-means-without-mask",
         [](const Config& c) { return c.mask_means && c.mask_path.empty(); },
         "--mask-means says how to read --mask, but no --mask was given"},
    };
    return table;
}

// --draft K as its chain; the tree checked, and no longer than the T tokens decoded.
void settle_draft(Config& c) {
    if (c.draft) c.draft_tree = draft_chain(*c.draft);
    if (c.draft_tree.empty()) return;
    draft_depths(c.draft_tree);
    const std::size_t K = c.draft_tree.size();
    if (c.seq_len && K > *c.seq_len) {
        throw Error(std::string(c.draft ? "--draft" : "--draft-tree") + " gives " +
                    std::to_string(K) + " draft tokens, more than the T = " +
                    std::to_string(*c.seq_len) +
                    " decoded; the draft is the last K of the T tokens");
    }
}

}  // namespace

void settle(Config& c) {
    if (!c.text_file.empty()) {  // the text first: every rule about --text holds for it too
        if (c.text) throw Error("--text and --text-file both give the text; give one");
        c.text = read_small_file(c.text_file, std::uint64_t(16) << 20, "--text-file");
    }
    check_rules(rules(), c, fill);
    // MLA's form wins over --decode, which then decodes it with its latent cache
    const FormChoice form = asks(c, FormChoice::Mla) ? FormChoice::Mla
                            : c.forms.empty()        ? FormChoice::Packed
                                                     : c.forms.front();
    switch (form) {
        case FormChoice::Packed:
            break;
        case FormChoice::FusedQkv:
            c.form = Form::FusedQkv;
            break;
        case FormChoice::PerHead:
            c.form = Form::PerHead;
            break;
        case FormChoice::Decode:
            c.form = Form::Decode;
            if (c.decode) c.seq_len = c.decode;
            if (!c.prefill_chunks.empty() && !c.seq_len) {
                std::size_t sum = 0;  // each chunk is below 2^32 tokens (max_size)
                for (std::size_t chunk : c.prefill_chunks) sum += chunk;
                c.seq_len = sum;
            }
            c.causal = true;
            settle_draft(c);
            break;
        case FormChoice::Block:
            c.block = c.block.value_or(BlockKind::Pre);
            break;
        case FormChoice::Mla:
            c.form = Form::Mla;
            c.mla_decode = asks(c, FormChoice::Decode);
            if (c.mla_decode) {
                if (c.decode) c.seq_len = c.decode;
                c.causal = true;
            }
            break;
    }
    if (c.demo_heads) c.causal = true;
    if (c.weights_path.empty() && !c.kv_heads) c.kv_heads = c.heads.value_or(default_heads);
}

}  // namespace mha
