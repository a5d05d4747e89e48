// The second oracle of the Jinja parity test: @huggingface/jinja (the engine transformers.js
// renders chat templates with; npm, pinned in tools/oracles/package.json).
//   node hf_jinja_js.mjs NODE_MODULES JOB.json OUT.json
// JOB.json: {"now": "2026-07-26T13:45:00", "templates": {id: source},
//            "items": [{"template": id, "context": id, "vars": {...}}]}
// OUT.json: [{"template", "context", "ok": true, "text"} | {..., "ok": false, "error"}]
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [modules, jobPath, outPath] = process.argv.slice(2);
// ES modules ignore NODE_PATH: resolve the pinned package from the oracles folder.
const { Template } = createRequire(path.join(path.resolve(modules), "x.js"))("@huggingface/jinja");
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
// Its own strftime_now reads `new Date()`: pin the clock the other engines use.
const [date, time] = job.now.split("T");
const [Y, M, D] = date.split("-").map(Number);
const [h, m, s] = time.split(":").map(Number);
const pinned = new Date(Y, M - 1, D, h, m, s).getTime();
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(pinned);
    else super(...args);
  }
  static now() { return pinned; }
};

const compiled = {};
const out = [];
for (const item of job.items) {
  const rec = { template: item.template, context: item.context };
  try {
    if (!(item.template in compiled)) compiled[item.template] = new Template(job.templates[item.template]);
    const t = compiled[item.template];
    if (t instanceof Error) throw t;
    rec.text = t.render(item.vars);
    rec.ok = true;
  } catch (e) {
    if (!(item.template in compiled)) compiled[item.template] = e;
    rec.ok = false;
    rec.error = String(e && e.message ? e.message : e).slice(0, 300);
  }
  out.push(rec);
}
fs.writeFileSync(outPath, JSON.stringify(out));
