// The numbers of each preset, as their papers and released configurations give them.

#include "app/cli/presets.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "app/cli/did_you_mean.h"
#include "core/error.h"

namespace mha {

const std::vector<Preset>& presets() {
    static const std::vector<Preset> table = {
        {"transformer-base", "Transformer base", 512, 8, 8, 512, 2048, 6, true},
        {"bert-base", "BERT-base", 768, 12, 12, 512, 3072, 12, true},
        {"gpt2", "GPT-2 small (124M)", 768, 12, 12, 1024, 3072, 12, true},
        {"gpt2-medium", "GPT-2 medium (355M)", 1024, 16, 16, 1024, 4096, 24, true},
        {"gpt2-large", "GPT-2 large (774M)", 1280, 20, 20, 1024, 5120, 36, true},
        {"gpt2-xl", "GPT-2 XL (1.5B)", 1600, 25, 25, 1024, 6400, 48, true},
        {"gpt3", "GPT-3 175B", 12288, 96, 96, 2048, 49152, 96, true},
        {"llama2-7b", "Llama 2 7B", 4096, 32, 32, 4096, 11008, 32, false, 10000.0},
        {"llama2-70b", "Llama 2 70B", 8192, 64, 8, 4096, 28672, 80, false, 10000.0},
        {"llama3-8b", "Llama 3 8B", 4096, 32, 8, 8192, 14336, 32, false, 500000.0},
        {"mistral-7b", "Mistral 7B", 4096, 32, 8, 8192, 14336, 32, false, 10000.0, 4096},
        {"deepseek-v2-lite", "DeepSeek-V2-Lite", 2048, 16, 16, 4096, 10944, 27, false, 0.0, 0, 512,
         64},
        {"gemma2-2b", "Gemma 2 2B", 2304, 8, 4, 8192, 9216, 26, false, 10000.0, 0, 0, 0, 256, 256.0,
         50.0, 4096},
        {"gemma2-9b", "Gemma 2 9B", 3584, 16, 8, 8192, 14336, 42, false, 10000.0, 0, 0, 0, 256,
         256.0, 50.0, 4096},
        {"gemma2-27b", "Gemma 2 27B", 4608, 32, 16, 8192, 36864, 46, false, 10000.0, 0, 0, 0, 128,
         144.0, 50.0, 4096},
    };
    return table;
}

const Preset& find_preset(const std::string& name) {
    const auto same_letters = [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) ==
               std::tolower(static_cast<unsigned char>(b));
    };
    std::string list;
    std::vector<std::string> names;
    for (const Preset& preset : presets()) {
        if (std::equal(preset.name.begin(), preset.name.end(), name.begin(), name.end(),
                       same_letters))
            return preset;
        list += (list.empty() ? "" : ", ") + preset.name;
        names.push_back(preset.name);
    }
    throw Error("--preset expects one of " + list + ", got '" + name + "'" +
                did_you_mean(name, names));
}

std::string presets_table() {
    std::string text =
        "name              model               d_model   h   G  d_k      N   d_ff layers\n";
    char line[128];
    for (const Preset& p : presets()) {
        std::snprintf(line, sizeof line, "%-17s %-19s %7zu %3zu %3zu %4zu %6zu %6zu %6zu\n",
                      p.name.c_str(), p.model.c_str(), p.d_model, p.heads, p.kv_heads,
                      p.head_dim > 0 ? p.head_dim : p.d_model / p.heads, p.context, p.d_ff,
                      p.layers);
        text += line;
    }
    return text +
           "N is the context length; G < h: grouped-query attention.\n"
           "Sources: docs/presets.md\n";
}

// --layer L of a preset whose local (even-indexed) and global layers alternate: the window
// on a local layer, and the kind of layer for the header.
void apply_layer(const Preset& p, Config& c) {
    if (!c.layer) {
        if (p.local_window > 0) c.layer_kind = "a global layer (--layer L: even L are local)";
        return;
    }
    if (p.local_window == 0) {
        throw Error("--layer with --preset " + p.name + ": its " + std::to_string(p.layers) +
                    " layers all compute the same attention; --layer picks a local or global "
                    "layer of a preset that alternates them (gemma2-2b, gemma2-9b, gemma2-27b)");
    }
    if (*c.layer >= p.layers) {
        throw Error("--layer " + std::to_string(*c.layer) + " is not a layer of " + p.model +
                    ": the layers are 0.." + std::to_string(p.layers - 1));
    }
    const bool local = *c.layer % 2 == 0;
    if (local && c.scores.window == 0) c.scores.window = p.local_window;
    c.layer_kind = (local ? "local layer " : "global layer ") + std::to_string(*c.layer) +
                   (local ? " (sliding window " + std::to_string(p.local_window) + ")" : "");
}

void apply_preset(const Preset& p, const std::vector<std::string>& given, Config& c) {
    const auto was_given = [&given](const char* option) {
        return std::find(given.begin(), given.end(), option) != given.end();
    };
    if (!c.batch) c.batch = 1;
    if (c.decode && !c.seq_len) {  // decoding T tokens of the model's context, not all of it
        if (*c.decode > p.context) {
            throw Error("--decode " + std::to_string(*c.decode) + " is longer than " + p.model +
                        "'s context of " + std::to_string(p.context) + " positions");
        }
        c.seq_len = *c.decode;
    }
    if (!c.seq_len) c.seq_len = p.context;
    if (!c.d_model) c.d_model = p.d_model;
    if (!c.heads) c.heads = p.heads;
    if (!c.kv_heads && !was_given("--heads")) c.kv_heads = p.kv_heads;
    if (!was_given("--no-bias") && !was_given("--random-bias")) c.bias = p.bias;
    if (p.rope_theta > 0.0) {
        if (!c.rope) c.rope = RopeLayout::Half;
        if (!c.rope_theta) c.rope_theta = p.rope_theta;
    }
    if (p.window > 0 && c.scores.window == 0) c.scores.window = p.window;
    if (p.head_dim > 0 && !c.head_dim && !was_given("--heads")) c.head_dim = p.head_dim;
    if (p.scale_base > 0.0 && !c.scores.scale_base && !c.no_scale)
        c.scores.scale_base = p.scale_base;
    if (p.softcap > 0.0 && !c.scores.softcap) c.scores.softcap = p.softcap;
    apply_layer(p, c);
    const bool other_form = std::any_of(c.forms.begin(), c.forms.end(), [](FormChoice f) {
        return f != FormChoice::Mla && f != FormChoice::Packed && f != FormChoice::Decode;
    });
    if (p.mla_latent > 0 && other_form) {
        throw Error("--preset " + p.name + " attends with MLA (--form mla), which "
                    "--fused-qkv, --per-head and --block do not compute; --form packed "
                    "runs its sizes as plain multi-head attention");
    }
    const bool packed =
        std::find(c.forms.begin(), c.forms.end(), FormChoice::Packed) != c.forms.end();
    if (p.mla_latent > 0 && !packed) {  // MLA, decoded with its latent cache under --decode
        if (std::find(c.forms.begin(), c.forms.end(), FormChoice::Mla) == c.forms.end())
            c.forms.push_back(FormChoice::Mla);
        if (!c.latent_dim) c.latent_dim = p.mla_latent;
        if (!c.rope_dim) c.rope_dim = p.mla_rope;
    }
    const bool block =
        std::find(c.forms.begin(), c.forms.end(), FormChoice::Block) != c.forms.end();
    if (block && !c.d_ff) c.d_ff = p.d_ff;
}

}  // namespace mha
