"""Python jinja2 3.1 set up the way Hugging Face transformers renders chat templates.

The reference ("oracle") side of stoker's Jinja parity tests and of `stoker bench template`.
What transformers does (utils/chat_template_utils.py, read at commits 5e43e2e8 and 598a3dc3 of
huggingface/transformers; facts restated here, code written for stoker):
  * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loop-controls
    extension and an extension for the `{% generation %}...{% endgeneration %}` tag;
  * the `tojson` filter replaced by json.dumps(x, ensure_ascii=False, indent=None,
    separators=None, sort_keys=False) with those keywords open to the template;
  * globals raise_exception(msg) -> TemplateError(msg) and strftime_now(fmt) (local time);
  * render variables: messages, tools, documents, add_generation_prompt, **kwargs (special tokens
    and template kwargs such as enable_thinking);
  * generation spans: the template is rendered with generate(); when a generation block finishes,
    its (start, end) character span is recorded, start being the length of everything yielded so
    far — but only once the tracker is "active", i.e. once something has been yielded or a span
    recorded (transformers tests the truthiness of both lists).

The clock is injectable (strftime_now reads `clock()`), so tests pin it.
"""
import datetime
import json

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _SpanTracker(Extension):
    tags = {"generation"}

    def __init__(self, environment):
        super().__init__(environment)
        self.emitted = None  # list of yielded chunks while a tracked render runs
        self.spans = None

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_generation_block")
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_block(self, caller):
        text = caller()
        # transformers' rule: record only while the tracker is active, and "active" is the
        # truthiness of its two lists (nothing yielded and nothing recorded yet = inactive).
        if self.emitted or self.spans:
            start = sum(len(chunk) for chunk in self.emitted)
            self.spans.append((start, start + len(text)))
        return text


def make_environment(clock=None):
    """The HF environment; `clock()` returns the datetime strftime_now formats."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_SpanTracker, loopcontrols])

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    now = clock or datetime.datetime.now

    def strftime_now(fmt):
        return now().strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def _tracker(env):
    for ext in env.extensions.values():
        if isinstance(ext, _SpanTracker):
            return ext
    raise RuntimeError("no generation tracker")


def render(template, variables, env=None):
    """Renders a compiled template (or source) with HF's variables; returns (text, spans).

    `variables` is the full variable dict (messages, tools, documents, add_generation_prompt,
    special tokens, kwargs). Spans are Python character offsets, as transformers records them.
    """
    if env is None:
        env = make_environment()
    if isinstance(template, str):
        template = env.from_string(template)
    tracker = _tracker(template.environment)
    emitted, spans = [], []
    tracker.emitted, tracker.spans = emitted, spans
    try:
        for chunk in template.generate(**variables):
            emitted.append(chunk)
    finally:
        tracker.emitted, tracker.spans = None, None
    return "".join(emitted), spans


def hf_variables(context):
    """A context record -> the variables transformers passes to the template.

    messages, tools, documents, add_generation_prompt are always present (None / False when the
    record lacks them, as apply_chat_template's defaults); `special_tokens` and `kwargs` are
    merged in, kwargs last (they overwrite special tokens, as in transformers).
    """
    out = {
        "messages": context.get("messages", []),
        "tools": context.get("tools"),
        "documents": context.get("documents"),
        "add_generation_prompt": bool(context.get("add_generation_prompt", False)),
    }
    out.update(context.get("special_tokens", {}))
    out.update(context.get("kwargs", {}))
    return out


def char_spans_to_bytes(text, spans):
    """Python character spans -> UTF-8 byte spans of the same text."""
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode("utf-8")))

    def at(i):
        return offsets[i] if i < len(offsets) else offsets[-1] + (i - len(text))

    return [(at(s), at(e)) for s, e in spans]


def assistant_mask_tokenizer_rule(spans, offsets, n_tokens):
    """transformers' tokenizer rule (tokenization_utils_base.apply_chat_template, read at
    598a3dc3): for each span, first token covering `start` to first token covering `end - 1`
    (to the end when that is None or token 0); stop at the first span whose start no token
    covers (truncation). `offsets` are per-token character (start, end)."""

    def char_to_token(pos):
        for t, (s, e) in enumerate(offsets):
            if s <= pos < e:
                return t
        return None

    mask = [0] * n_tokens
    for start, end in spans:
        first = char_to_token(start)
        last = char_to_token(end - 1)
        if first is None:
            break
        for t in range(first, last + 1 if last else n_tokens):
            mask[t] = 1
    return mask
