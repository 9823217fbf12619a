"""One parsed JSON line -> its samples, with the fields detected by shape or named in the config.

Detection order (what a record is, then each field): a top-level list is a batch (SGLang's
`/generate` with a list of prompts, the HF pipeline), each element a sample; envelopes are
unwrapped (`response.body` of a batch output line, Anthropic's `result.message`, a client's
`{"request": ..., "response": {...}}`), keeping the outer record for request echoes; several
`choices`/`outputs` (n > 1) are several samples. An error comes first (an error record has no
usable text); then text, finish reason, tokens, prompt tokens, reasoning and the limit, each by
the first rule that answers (`dash.core.samples.shapes`). A field named in `[outputs]` is read
from its path first; a path that does not match falls back to detection and is counted as a
miss, so a path that never matches can be shown rather than read as zeros.
"""

from __future__ import annotations

from typing import Any

from dash.core.samples import reasoning, shapes, traits
from dash.core.samples.fieldspec import OutputFields
from dash.core.samples.model import FieldHits, Sample
from dash.core.samples.paths import MISSING, lookup, show_path
from dash.core.samples.shapes import Rec, count, dig

MAX_ERROR_CHARS = 300


class Extractor:
    """Reads samples out of records; counts the hits and misses of configured paths."""

    def __init__(self, spec: OutputFields | None = None) -> None:
        self.spec = spec or OutputFields()
        self._paths = self.spec.paths()
        self._hits = {field: [0, 0] for field, _ in self._paths}

    def samples(self, obj: Any) -> list[Sample]:
        """The samples of one parsed line ([] when nothing in it is recognised)."""
        out: list[Sample] = []
        if isinstance(obj, list):
            for item in obj:
                if isinstance(item, dict):
                    out.extend(self._record(item))
        elif isinstance(obj, dict):
            out.extend(self._record(obj))
        return out

    def take_hits(self) -> tuple[FieldHits, ...]:
        """Hits and misses of each configured path since the last call."""
        got = tuple(FieldHits(f, show_path(p), *self._hits[f]) for f, p in self._paths)
        for counts in self._hits.values():
            counts[0] = counts[1] = 0
        return got

    def _record(self, rec: Rec) -> list[Sample]:
        body = _unwrap(rec)
        if body.keys() & traits.CANDIDATE_SET:
            found = self._candidates(body)
            if found is not None:
                return found
        many = [k for k in ("choices", "outputs", "candidates")
                if isinstance(body.get(k), list) and len(body[k]) > 1]
        if many:  # n > 1: each choice is a sample; the usage is shared: only its prompt
            key = many[0]  # counts for each (a choice's own tokens: its token ids, logprobs)
            usage = body.get("usage")
            shared = {k: v for k, v in usage.items() if k in ("prompt_tokens", "input_tokens")
                      } if isinstance(usage, dict) else None
            return [s for choice in body[key] if isinstance(choice, dict)
                    if (s := self._one({**body, key: [choice], "usage": shared}, rec))]
        one = self._one(body, rec)
        return [one] if one is not None else []

    def _candidates(self, body: Rec) -> list[Sample] | None:
        """Each response of a best-of-n record (`{"prompt": ..., "responses": [...]}`), read
        with the record around it (its request echoes, its usage), or None when it is not one."""
        cand = traits.candidates(body)
        if cand is None or shapes.text_of(body) is not None:
            return None
        key, items = cand
        rest = {k: v for k, v in body.items() if k != key}
        out = []
        for item in items:
            inner = {"response": item} if isinstance(item, str) else item
            if isinstance(inner, dict) and (s := self._one({**rest, **inner}, body)):
                out.append(s)
        return out

    def _configured(self, field: str, body: Rec, outer: Rec) -> Any:
        path = getattr(self.spec, field)
        if path is None:
            return MISSING
        value = lookup(body, path)
        if value is MISSING and body is not outer:
            value = lookup(outer, path)
        self._hits[field][0 if value is not MISSING else 1] += 1
        return value

    def _one(self, body: Rec, outer: Rec) -> Sample | None:
        error = self._error(body, outer)
        found = shapes.text_of(body)
        shape = found[0] if found else "unknown"
        text = self._configured("text", body, outer)
        text = (found[1] if found else None) if text is MISSING else _text(text)
        finish, finish_raw, limit = self._finish(body, outer)
        tokens = self._number("tokens", body, outer, shapes.tokens_of)
        prompt = self._number("prompt_tokens", body, outer, shapes.prompt_tokens_of)
        if found is None and text is None and error is None and finish is None and tokens is None:
            return None
        if text is None and found is not None and error is None:
            text = ""  # a known shape with no text: `content: null` (cut off while reasoning)
        state: reasoning.ReasoningState | None = None
        empty = False
        if text is not None:
            state, answered = reasoning.answered(text)
            structured = self._reasoning(body, outer)
            if structured is not None:
                state = "present" if structured.strip() else "empty"
            elif state == "absent" and traits.reasoned(body):
                state = "present"  # reasoned, the text kept back (a count, no text)
            empty = error is None and not answered and not shapes.tool_call(body)
        return Sample(shape=shape, error=error, finish=finish, finish_raw=finish_raw,
                      tokens=tokens, chars=None if text is None else len(text),
                      prompt_tokens=prompt, empty=empty, reasoning=state,
                      limit=limit or shapes.limit_of(body, outer))

    def _finish(self, body: Rec, outer: Rec) -> tuple[Any, str | None, int | None]:
        raw = self._configured("finish", body, outer)
        limit = None
        if isinstance(raw, dict):  # a path to SGLang's finish_reason object
            limit = count(raw.get("length"))
            raw = raw.get("type")
        if raw is MISSING or not isinstance(raw, str) or not raw:
            found = shapes.finish_of(body, outer)
            if found is None:
                return None, None, None
            raw, limit = found
        return shapes.normalize_finish(raw), raw[:40], limit

    def _number(self, field: str, body: Rec, outer: Rec,
                detect: Any) -> int | None:
        value = self._configured(field, body, outer)
        if value is not MISSING and count(value) is not None:
            return count(value)
        found: int | None = detect(body, outer)
        return found

    def _reasoning(self, body: Rec, outer: Rec) -> str | None:
        value = self._configured("reasoning", body, outer)
        if value is not MISSING:
            return value if isinstance(value, str) else ("" if value is None else str(value))
        return shapes.reasoning_of(body, outer)

    def _error(self, body: Rec, outer: Rec) -> str | None:
        value = self._configured("error", body, outer)
        if value is not MISSING:
            return _message(value)
        for rec in (body, outer):
            msg = _message(rec.get("error"))
            if msg:
                return msg
            if rec.get("object") == "error" or rec.get("type") == "error":
                return _message(rec.get("message")) or "error record"
        status = dig(outer, "response", "status_code")
        if isinstance(status, int) and status >= 400:
            return f"HTTP {status}"
        result = outer.get("result")
        if isinstance(result, dict) and result.get("type") in ("errored", "canceled", "expired"):
            return _message(result.get("error")) or f"batch result {result['type']}"
        if body.get("status") in ("failed", "cancelled") and isinstance(body.get("output"), list):
            return _message(body.get("error")) or f"response {body['status']}"
        return _script_error(outer)


SCRIPT_ERROR_KEYS = ("error_message", "error_msg", "exception")
"""Where scripts that catch a failed request write its message (beside `error`)."""


def _script_error(rec: Rec) -> str | None:
    """A script's own failure record: `"status": "failed"`, `"success": false`, an HTTP
    `status_code` >= 400, or a message under `error_message`/`exception`."""
    for key in SCRIPT_ERROR_KEYS:
        msg = _message(rec.get(key)) if key in rec else None
        if msg:
            return msg
    status, code = rec.get("status"), rec.get("status_code")
    failed = (isinstance(status, str) and status.lower() in shapes.FAILED_STATUS) or (
        rec.get("success") is False) or (isinstance(code, int) and not isinstance(code, bool)
                                         and code >= 400)
    if not failed:
        return None
    detail = rec.get("message") or rec.get("detail") or rec.get("reason")
    return _message(detail) or (f"HTTP {code}" if isinstance(code, int) and code >= 400
                                else f"status {status}" if status else "success false")


def _unwrap(rec: Rec) -> Rec:
    """The response inside an envelope (a batch output line, a client's wrapper), or `rec`."""
    body = dig(rec, "response", "body")
    if isinstance(body, dict):
        return body
    result = rec.get("result")
    if isinstance(result, dict) and result.get("type") == "succeeded":
        message = result.get("message")
        if isinstance(message, dict):
            return message
    if shapes.looks_like_response(rec):
        return rec
    for key in ("response", "output", "result", "raw", "completion"):
        inner = rec.get(key)
        if isinstance(inner, dict) and shapes.looks_like_response(inner):
            return inner
    return rec


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    return shapes.join_parts(value)


def _message(value: Any) -> str | None:
    """An error value as one short line (a string, or a dict's message), None when unset."""
    if value is None or value is False or value == "" or value == {}:
        return None
    if isinstance(value, dict):
        inner = value.get("message") or value.get("error") or value.get("type") or value
        value = inner if not isinstance(inner, dict) else inner.get("message", inner)
    text = " ".join(str(value).split())
    return text[:MAX_ERROR_CHARS] or None
