// Writes the expected ids of Llama 2 and Llama 3 for every string of the corpus, from npm's
// llama-tokenizer-js and llama3-tokenizer-js, called as Hugging Face's tokenizers encode with the
// post-processor's special tokens: a BOS and no EOS.
//
//   node make_llama_expected.mjs NODE_MODULES CORPUS
//
// CORPUS is a JSON array of strings; writes llama2_ids.txt and llama3_ids.txt beside this script,
// one line per string: the ids, space-separated. Run once; the outputs are committed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [modules, corpus_path] = process.argv.slice(2);
if (!modules || !corpus_path) {
    console.error('usage: node make_llama_expected.mjs NODE_MODULES CORPUS');
    process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const corpus = JSON.parse(fs.readFileSync(corpus_path, 'utf8'));

async function load(entry) {
    return (await import(pathToFileURL(path.join(modules, entry)).href)).default;
}

// Each string's ids, checked to decode back to the string (less the BOS and prefix space).
function expected(name, encode, decode) {
    const lines = corpus.map((text) => {
        const ids = encode(text);
        const back = decode(ids.slice(1));
        if (back !== text) throw new Error(`${name}: ${JSON.stringify(text)} decodes to ${JSON.stringify(back)}`);
        return ids.join(' ');
    });
    fs.writeFileSync(path.join(here, `${name}_ids.txt`), lines.join('\n') + '\n');
}

const llama2 = await load('llama-tokenizer-js/llama-tokenizer.js');
// encode(text, add_bos_token, add_preceding_space); an empty text gives [] where tokenizers gives
// the BOS alone, so the corpus has no empty string
expected('llama2', (text) => llama2.encode(text, true, true),
         (ids) => llama2.decode(ids, false, true));

const llama3 = await load('llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js');
expected('llama3', (text) => llama3.encode(text, { bos: true, eos: false }),
         (ids) => llama3.decode(ids));
