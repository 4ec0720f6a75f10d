# bash completion for mha: options, their fixed choices, and file names where a file goes.
# Installed by `make install` to share/bash-completion/completions/mha.

_mha() {
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}

    local options="--batch --seq-len --kv-len --d-model --heads --seed --threads --causal
        --no-bias --random-bias --add-zero-attn --trace --values --step --format --output --explain --weights --input --key
        --value --seq-first --mask --mask-means --key-padding-mask --masked-rows --save --backward --grad-output --max-memory
        --max-time --weights-prefix --head-contributions --compare
        --text --demo-heads --heatmap --summary --head --color --scale --export-svg --ablate-head
        --no-scale --kv-heads --text-file --no-special --form --decode --draft --draft-tree --draft-layers --prefill-chunks --kv-block-size --kv-pool-seed --kv-quant --kv-quant-group --kv-quant-axis --kv-residual --fused-qkv --per-head --block --d-ff --preset
        --shapes-only --list-presets --attention --flash-row --rope --rope-theta --alibi --window
        --sink-tokens --softcap --scale-base --head-dim --qk-norm --gate --latent-dim --rope-dim --model --checkpoint --tokens --config --layer --gradcheck --help --version"
    local quiz_options="--count --seed --topics --answers --pass --questions --help"
    local grade_options="--files-in --help"
    local bench_options="--repeat --threads --sizes --heads --quick --json --backward --train --compare-torch --timing --checkpoint --seq-len --help"
    local train_options="--steps --time-limit --seed --threads --lr --layers --d-model --heads --d-ff
        --context --batch --corpus --out --log --resume --save-batches --eval-every --max-memory --max-time --help"
    local tokenize_options="--checkpoint --text --text-file --ids --no-special --trace --max-memory --help"

    if [[ ${COMP_WORDS[1]} == quiz && COMP_CWORD -gt 1 ]]; then
        case $prev in
            --answers) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            --topics) COMPREPLY=($(compgen -W "shapes d_k parameters macs kv-cache copies rope window gradients tokens serving" -- "$cur")); return ;;
            --count|--seed|--pass) return ;;
        esac
        COMPREPLY=($(compgen -W "$quiz_options" -- "$cur"))
        return
    fi

    if [[ ${COMP_WORDS[1]} == grade && COMP_CWORD -gt 1 ]]; then
        case $prev in
            --files-in) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$grade_options" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi

    if [[ ${COMP_WORDS[1]} == bench && COMP_CWORD -gt 1 ]]; then
        case $prev in
            --repeat|--threads|--sizes|--heads|--seq-len|-n) return ;;
            --timing) COMPREPLY=($(compgen -W "turns tight" -- "$cur")); return ;;
            --checkpoint) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        esac
        COMPREPLY=($(compgen -W "$bench_options" -- "$cur"))
        return
    fi

    if [[ ${COMP_WORDS[1]} == train && COMP_CWORD -gt 1 ]]; then
        case $prev in
            --out|-o|--resume|--save-batches) COMPREPLY=($(compgen -f -X '!*.npz' -- "$cur") $(compgen -d -- "$cur")); return ;;
            --log) COMPREPLY=($(compgen -f -X '!*.jsonl' -- "$cur") $(compgen -d -- "$cur")); return ;;
            --corpus) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            --max-time) COMPREPLY=($(compgen -W "off" -- "$cur")); return ;;
            --steps|--time-limit|--seed|--threads|-t|--lr|--layers|--d-model|-d|--heads|-H|--d-ff|--context|--batch|-b|--eval-every|--max-memory) return ;;
        esac
        COMPREPLY=($(compgen -W "$train_options" -- "$cur"))
        return
    fi

    if [[ ${COMP_WORDS[1]} == tokenize && COMP_CWORD -gt 1 ]]; then
        case $prev in
            --checkpoint) COMPREPLY=($(compgen -d -- "$cur")); return ;;
            --text-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            --text|--max-memory) return ;;
        esac
        COMPREPLY=($(compgen -W "$tokenize_options" -- "$cur"))
        return
    fi

    # --causal=ALIGN: bash splits the word at '=', so the alignment follows a lone "="
    if [[ $prev == = && ${COMP_WORDS[COMP_CWORD-2]} == --causal ]]; then
        COMPREPLY=($(compgen -W "bottom-right top-left" -- "$cur")); return
    fi
    case $prev in
        --format) COMPREPLY=($(compgen -W "text json markdown html" -- "$cur")); return ;;
        --scale) COMPREPLY=($(compgen -W "fixed auto" -- "$cur")); return ;;
        --mask-means) COMPREPLY=($(compgen -W "block keep" -- "$cur")); return ;;
        --masked-rows) COMPREPLY=($(compgen -W "nan zero" -- "$cur")); return ;;
        --attention) COMPREPLY=($(compgen -W "auto standard streaming" -- "$cur")); return ;;
        --form) COMPREPLY=($(compgen -W "packed fused-qkv per-head decode block mla" -- "$cur")); return ;;
        --block) COMPREPLY=($(compgen -W "pre post" -- "$cur")); return ;;
        --kv-quant) COMPREPLY=($(compgen -W "int8 int4" -- "$cur")); return ;;
        --kv-quant-axis) COMPREPLY=($(compgen -W "token channel kivi" -- "$cur")); return ;;
        --rope) COMPREPLY=($(compgen -W "half interleaved" -- "$cur")); return ;;
        --gate) COMPREPLY=($(compgen -W "elementwise headwise" -- "$cur")); return ;;
        --preset) COMPREPLY=($(compgen -W "transformer-base bert-base gpt2 gpt2-medium gpt2-large gpt2-xl gpt3 llama2-7b llama2-70b llama3-8b mistral-7b deepseek-v2-lite gemma2-2b gemma2-9b gemma2-27b" -- "$cur")); return ;;
        --color) COMPREPLY=($(compgen -W "auto always never 256 truecolor" -- "$cur")); return ;;
        --head) COMPREPLY=($(compgen -W "mean" -- "$cur")); return ;;
        --max-time) COMPREPLY=($(compgen -W "off" -- "$cur")); return ;;
        --export-svg) COMPREPLY=($(compgen -f -X '!*.svg' -- "$cur") $(compgen -d -- "$cur")); return ;;
        --output) COMPREPLY=($(compgen -f -X '!*.html' -- "$cur") $(compgen -d -- "$cur")); return ;;
        --weights|--save|--model) COMPREPLY=($(compgen -f -X '!*.npz' -- "$cur") $(compgen -d -- "$cur")); return ;;
        --checkpoint) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --config) COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur")); return ;;
        --input|--key|--value|--mask|--key-padding-mask|--grad-output)
            COMPREPLY=($(compgen -f -X '!*.npy' -- "$cur") $(compgen -d -- "$cur")); return ;;
        --batch|-b|--seq-len|-n|--kv-len|-m|--d-model|-d|--heads|-H|--seed|--threads|-t|--max-memory|--text|--ablate-head|--kv-heads|-G|--decode|--draft|--draft-tree|--draft-layers|--d-ff|--rope-theta|--window|--sink-tokens|--softcap|--scale-base|--head-dim|--layer|--flash-row|--latent-dim|--rope-dim|--weights-prefix|--compare|--prefill-chunks|--kv-block-size|--kv-pool-seed|--kv-quant-group|--kv-residual|--tokens)
            return ;;
    esac
    if [[ COMP_CWORD -eq 1 && $cur != -* ]]; then
        COMPREPLY=($(compgen -W "quiz grade bench train tokenize" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
}

complete -F _mha mha
