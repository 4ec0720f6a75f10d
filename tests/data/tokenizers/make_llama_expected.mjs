// Writes llama2_ids.json and llama3_ids.json beside it: the ids npm's llama-tokenizer-js and
// llama3-tokenizer-js give each string of corpus.json, called as Hugging Face's tokenizers encode
// with the post-processor's special tokens: a BOS and no EOS. Each string is checked to decode
// back to itself. Run once from the repository root, after tests/ensure-npm-tokenizers:
//   node tests/data/tokenizers/make_llama_expected.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '..', '..', 'npm', 'node_modules');
const corpus = JSON.parse(fs.readFileSync(path.join(here, 'corpus.json'), 'utf8'));

function version(name) {
    return JSON.parse(fs.readFileSync(path.join(modules, name, 'package.json'), 'utf8')).version;
}

async function load(entry) {
    return (await import(pathToFileURL(path.join(modules, entry)).href)).default;
}

// Each string's ids, checked to decode back to the string (less the BOS and prefix space).
function expected(name, reference, encode, decode) {
    const ids = corpus.map((text) => {
        const row = encode(text);
        const back = decode(row.slice(1));
        if (back !== text) throw new Error(`${name}: ${JSON.stringify(text)} decodes to ${JSON.stringify(back)}`);
        return row;
    });
    const lines = ['{"reference": ' + JSON.stringify(reference) + ', "ids": ['];
    ids.forEach((row, i) => lines.push(JSON.stringify(row) + (i + 1 < ids.length ? ',' : '')));
    lines.push(']}');
    fs.writeFileSync(path.join(here, `${name}_ids.json`), lines.join('\n') + '\n');
    console.log(`${name}_ids.json: ${ids.length} strings, ${ids.flat().length} ids`);
}

const llama2 = await load('llama-tokenizer-js/llama-tokenizer.js');
// encode(text, add_bos_token, add_preceding_space); an empty text gives [] where tokenizers gives
// the BOS alone, so the corpus has no empty string
expected('llama2', `llama-tokenizer-js@${version('llama-tokenizer-js')} encode(text, true, true)`,
         (text) => llama2.encode(text, true, true),
         (ids) => llama2.decode(ids, false, true));

const llama3 = await load('llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js');
expected('llama3', `llama3-tokenizer-js@${version('llama3-tokenizer-js')} encode(text, {bos: true, eos: false})`,
         (text) => llama3.encode(text, { bos: true, eos: false }),
         (ids) => llama3.decode(ids));
