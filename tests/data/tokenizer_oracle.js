// tokenizer_oracle.js: the reference GPT-2 token ids, from the npm package
// gpt-3-encoder itself, for tokenizer_parity.
//
// Usage: node tokenizer_oracle.js GPT3_ENCODER_DIR FILE...
// Prints one line per FILE: "<FILE>\t<n>\t<id> <id> ...". Files are read the
// way a Node user reads text, fs.readFileSync(f, 'utf8'), so invalid UTF-8
// reaches the encoder as U+FFFD (WHATWG replacement), which is what our
// tokenizer must reproduce.
'use strict';
const fs = require('fs');
const path = require('path');

const [pkgDir, ...files] = process.argv.slice(2);
if (!pkgDir || files.length === 0) {
  process.stderr.write('usage: node tokenizer_oracle.js GPT3_ENCODER_DIR FILE...\n');
  process.exit(2);
}
const { encode } = require(path.resolve(pkgDir));

// gpt-3-encoder's encode() grows its result with concat, quadratic in the
// token count: a 100k-token document takes minutes. So long texts are cut,
// and each piece encoded with the package's own encode(). A cut is made only
// right after a single "\n" between two non-whitespace characters, where the
// GPT-2 pattern gives the same pieces either way: the "\n" is a piece of its
// own in the whole text (\s+(?!\S) fails before the \S, \s+ takes the "\n")
// and at the end of the left part (\s+(?!\S) takes it at the end of input);
// the pattern has no lookbehind, so the right part splits as before.
const CHUNK_CHARS = 512;
function encodeLong(text) {
  const ids = [];
  const append = part => { for (const id of encode(part)) ids.push(id); };
  let start = 0;
  for (const m of text.matchAll(/(?<=\S)\n(?=\S)/gu)) {
    const cut = m.index + 1;
    if (cut - start >= CHUNK_CHARS) {
      append(text.slice(start, cut));
      start = cut;
    }
  }
  append(text.slice(start));
  return ids;
}

const out = fs.openSync('/dev/stdout', 'w');
for (const file of files) {
  const ids = encodeLong(fs.readFileSync(file, 'utf8'));
  // An id the encoder could not find comes out as undefined: fail loudly.
  const bad = ids.findIndex(id => !Number.isInteger(id));
  if (bad >= 0) throw new Error(`${file}: gpt-3-encoder gave a non-integer id at ${bad}`);
  fs.writeSync(out, `${file}\t${ids.length}\t${ids.join(' ')}\n`);
}
