// Template parity: stoker's C++ chat templates vs the shipped Jinja templates rendered by
// @huggingface/jinja (the engine transformers.js uses), and — with a tokenizer — stoker's ids vs
// Hugging Face's Rust tokenizers (npm `tokenizers`) on the whole rendered, pad-expanded string,
// and stoker's labels vs labels derived here independently: a token is supervised when its
// character offsets overlap an assistant span, the span being found by rendering message
// prefixes with Jinja (answer + <|im_end|> + "\n").
//
//   node chat_template_parity.mjs --tool BUILD/chat_template_tool --templates data/templates \
//        --oracles tools/oracles/node_modules [--count 150] [--seed 1] [--no-ids]
// Exit 0 when everything matches; prints the first mismatches otherwise.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith("--") ? all[i + 1] : true]);
    return acc;
  }, []));
const oracles = path.resolve(args.oracles ?? "tools/oracles/node_modules");
const require = createRequire(path.join(oracles, "_resolve.js"));
let jinjaPath;
try {
  jinjaPath = require.resolve("@huggingface/jinja");
} catch {
  console.log(`skipped: @huggingface/jinja not installed under ${oracles} (run the setup script)`);
  process.exit(77);  // ctest SKIP_RETURN_CODE
}
const { Template } = await import(pathToFileURL(jinjaPath).href);
const count = Number(args.count ?? 150);
const withIds = !args["no-ids"];

// Deterministic generator (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const PIECES = ["Hello", " world", "\n", "\n\n", "  ", "What is in the picture?", " é", "e\u0301",
  "中文测试", "😀", "123", "a\tb", " ", "'s", "<b>x</b>", '{"k": 1}', "...", "Describe", "\r\n",
  " ", "ünïcödé", "  trailing  ", "\n- item", "2024-01-01"];
const IMAGE_GRID = [1, 4, 4], VIDEO_GRID = [2, 4, 4], VIDEO_SECONDS = [0.25, 1.0];
// Python's f"{x:.1f}" of VIDEO_SECONDS (0.25 is exact in binary: ties-to-even gives "0.2";
// JavaScript's toFixed would say "0.3", so the strings are written out here).
const VIDEO_SECONDS_TEXT = ["0.2", "1.0"];

function makeConversation(r, qwen3) {
  const pick = (arr) => arr[Math.floor(r() * arr.length)];
  const text = (max = 6) => Array.from({ length: Math.floor(r() * max) + (r() < 0.9 ? 1 : 0) }, () => pick(PIECES)).join("");
  const answer = () => (r() < 0.15 ? "\n" : r() < 0.1 ? " " : "") + text();
  const messages = [];
  const s = r();
  if (s < 0.3) messages.push({ role: "system", content: text() });
  else if (s < 0.5) messages.push({ role: "system", content: [{ type: "text", text: text() }, { type: "text", text: text() }] });
  const turns = 1 + Math.floor(r() * 4);
  for (let t = 0; t < turns; t++) {
    if (r() < 0.35) {
      messages.push({ role: "user", content: text() });
    } else {
      const parts = [];
      const n = 1 + Math.floor(r() * 4);
      for (let k = 0; k < n; k++) {
        const x = r();
        if (x < 0.35) parts.push({ type: "image", image: `img_${t}_${k}.jpg` });
        else if (x < 0.45) parts.push({ type: "video", video: `vid_${t}_${k}.mp4` });
        else parts.push({ type: "text", text: text() });
      }
      messages.push({ role: "user", content: parts });
    }
    const a = r() < 0.6 ? answer() : [{ type: "text", text: answer() }, { type: "text", text: text() }];
    messages.push({ role: "assistant", content: a });
    if (qwen3 && t + 1 < turns && r() < 0.25) {
      const tools = 1 + Math.floor(r() * 2);
      for (let k = 0; k < tools; k++) messages.push({ role: "tool", content: text() });
      messages.push({ role: "assistant", content: answer() });
    }
  }
  return messages;
}

// The same conversation as a ShareGPT record: string values with <image>/<video> tags.
function asShareGPT(id, messages) {
  const images = [], videos = [];
  const conversations = messages.map((m) => {
    const from = { system: "system", user: "human", assistant: "gpt", tool: "observation" }[m.role];
    let value = m.content;
    if (Array.isArray(m.content)) {
      value = m.content.map((p) => {
        if (p.type === "image") { images.push(p.image); return "<image>"; }
        if (p.type === "video") { videos.push(p.video); return "<video>"; }
        return p.text;
      }).join("");
    }
    return { from, value };
  });
  return { id, conversations, images, videos };
}

function expand(text, qwen3) {
  const m2 = 4;
  const imagePads = "<|image_pad|>".repeat((IMAGE_GRID[0] * IMAGE_GRID[1] * IMAGE_GRID[2]) / m2);
  let out = text.split("<|image_pad|>").join(imagePads);
  const block = "<|vision_start|><|video_pad|><|vision_end|>";
  if (qwen3) {
    const per = "<|video_pad|>".repeat((VIDEO_GRID[1] * VIDEO_GRID[2]) / m2);
    const frames = VIDEO_SECONDS_TEXT.map((s) => `<${s} seconds><|vision_start|>${per}<|vision_end|>`).join("");
    out = out.split(block).join(frames);
  } else {
    out = out.split("<|video_pad|>").join("<|video_pad|>".repeat((VIDEO_GRID[0] * VIDEO_GRID[1] * VIDEO_GRID[2]) / m2));
  }
  return out;
}

const cpLen = (s) => Array.from(s).length;

// visionId: render with add_vision_id ("Picture N: "); the HF templates apply it to list content
// only, so then only the OpenAI-form records are compared (ShareGPT strings would differ).
async function checkModel(name, templateFile, tokenizerDir, qwen3, seed, visionId = false) {
  const template = new Template(fs.readFileSync(path.join(args.templates, templateFile), "utf8"));
  const render = (messages) => template.render({ messages, add_generation_prompt: false, add_vision_id: visionId });
  const r = rng(seed);
  const convs = Array.from({ length: count }, () => makeConversation(r, qwen3));
  const lines = [];
  convs.forEach((messages, i) => {
    lines.push(JSON.stringify({ id: `${name}-${i}`, messages }));
    if (!visionId) lines.push(JSON.stringify(asShareGPT(`${name}-${i}-sharegpt`, messages)));
  });
  const toolArgs = ["--template", name, "--image-grid", IMAGE_GRID.join(","),
    "--video-grid", VIDEO_GRID.join(","), "--video-seconds", VIDEO_SECONDS.join(",")];
  if (withIds) toolArgs.push("--tokenizer", tokenizerDir);
  if (visionId) toolArgs.push("--add-vision-id", "1");
  const run = spawnSync(args.tool, toolArgs, { input: lines.join("\n") + "\n", maxBuffer: 1 << 30, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`${args.tool} failed: ${run.stderr}`);
  const outs = run.stdout.trim().split("\n").map((l) => JSON.parse(l));
  if (outs.length !== lines.length) throw new Error(`expected ${lines.length} outputs, got ${outs.length}`);

  let tok = null;
  if (withIds) {
    const { Tokenizer } = require("tokenizers");
    tok = Tokenizer.fromFile(path.join(tokenizerDir, "tokenizer.json"));
  }
  let failures = 0, checkedIds = 0, supervised = 0;
  const fail = (msg) => { if (failures++ < 8) console.error(`[${name}] ${msg}`); };
  for (let i = 0; i < convs.length; i++) {
    const messages = convs[i];
    const want = render(messages);
    const per = visionId ? 1 : 2;
    for (const out of outs.slice(per * i, per * i + per)) {
      if (out.error) { fail(`${out.id}: stoker error ${out.error}`); continue; }
      if (out.text !== want) {
        fail(`${out.id}: text differs\n  jinja : ${JSON.stringify(want)}\n  stoker: ${JSON.stringify(out.text)}`);
        continue;
      }
      if (!tok) continue;
      const full = expand(want, qwen3);
      const enc = await tok.encode(full, null, { addSpecialTokens: false });
      const ids = Array.from(enc.getIds());
      if (JSON.stringify(ids) !== JSON.stringify(out.ids)) {
        fail(`${out.id}: ids differ (rust ${ids.length}, stoker ${out.ids.length})`);
        continue;
      }
      // Supervised character spans (code points, the unit of the Rust offsets).
      const spans = [];
      messages.forEach((m, k) => {
        if (m.role !== "assistant") return;
        const before = k === 0 ? "" : render(messages.slice(0, k));
        const start = cpLen(expand(before, qwen3) + "<|im_start|>assistant\n");
        const end = cpLen(expand(render(messages.slice(0, k + 1)), qwen3));
        spans.push([start, end]);
      });
      const offsets = enc.getOffsets();
      const labels = ids.map((id, t) =>
        spans.some(([a, b]) => offsets[t][0] < b && offsets[t][1] > a) ? id : -100);
      if (JSON.stringify(labels) !== JSON.stringify(out.labels)) {
        const t = labels.findIndex((l, k) => l !== out.labels[k]);
        fail(`${out.id}: labels differ first at token ${t} (oracle ${labels[t]}, stoker ${out.labels[t]})`);
        continue;
      }
      checkedIds++;
      supervised += labels.filter((l) => l !== -100).length;
    }
  }
  console.log(`${name}${visionId ? " add_vision_id" : ""}: ${lines.length} records, text ${failures ? "MISMATCH" : "ok"}` +
    (tok ? `, ids+labels checked on ${checkedIds} (${supervised} supervised tokens)` : ""));
  return failures;
}

const models = path.join(oracles, "@lenml");
let failures = 0;
failures += await checkModel("qwen2_5_vl", "qwen2_vl.jinja", path.join(models, "tokenizer-qwen2_5/models"), false, Number(args.seed ?? 1));
failures += await checkModel("qwen3_vl", "qwen3_vl_instruct.jinja", path.join(models, "tokenizer-qwen3/models"), true, Number(args.seed ?? 1) + 1);
failures += await checkModel("qwen2_5_vl", "qwen2_vl.jinja", path.join(models, "tokenizer-qwen2_5/models"), false, Number(args.seed ?? 1) + 2, true);
failures += await checkModel("qwen3_vl", "qwen3_vl_instruct.jinja", path.join(models, "tokenizer-qwen3/models"), true, Number(args.seed ?? 1) + 3, true);
if (failures) {
  console.error(`${failures} mismatch(es)`);
  process.exit(1);
}
