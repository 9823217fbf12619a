"""Where each record shape keeps its fields (read from the documented response formats).

- OpenAI chat/completions and the servers that copy them (SGLang, vLLM, DeepSeek):
  `choices[i].message.content` or `choices[i].text`, `choices[i].finish_reason`,
  `usage.{completion,prompt}_tokens`, reasoning in `message.reasoning_content` or
  `message.reasoning` (vLLM's newer name);
- SGLang `/generate`: `text`, `meta_info.finish_reason` ({"type": "length", "length": N}, or
  the legacy "FINISH_LENGTH: N" string), `meta_info.{completion,prompt}_tokens`;
- vLLM offline `RequestOutput`: `outputs[i].text`, `outputs[i].finish_reason`, `token_ids`,
  `prompt_token_ids`;
- OpenAI Responses (`output[]`, `status`, `incomplete_details.reason`), Anthropic Messages
  (`content[]` blocks, `stop_reason`), Gemini (`candidates[i]`), TGI (`generated_text`,
  `details`), and flat records scripts write (`response`, `output`, `finish_reason`, `error`).

Each getter takes the response body and the outer record (where request echoes live) and
returns a value or None; `dash.core.samples.fields` takes the first that answers.
"""

from __future__ import annotations

from typing import Any

from dash.core.samples.model import Finish

Rec = dict[str, Any]

FLAT_TEXT = ("response", "output", "completion", "generation", "model_output", "prediction",
             "generated", "output_text", "content", "text", "answer")
"""Script keys for the text, most specific first: `answer` last, as eval records keep the
reference answer there beside the model's `prediction`; `text` after the others, as records
that echo the prompt under `prompt` write vLLM's `outputs[0].text` as `text`."""
CANDIDATE_KEYS = ("responses", "outputs", "completions", "generations", "samples",
                  "candidates", "predictions", "answers")
"""Keys of best-of-n records: the prompt once, a list of responses (strings or records)."""
ASSISTANT_ROLES = frozenset(("assistant", "gpt", "model", "bot", "chatgpt"))
"""The answering turn's `role` (OpenAI, Gemini's `model`) or ShareGPT `from` (LLaMA-Factory's
`gpt`; other converters write `assistant`, `model`, `bot`, `chatgpt`)."""
FAILED_STATUS = frozenset(("failed", "failure", "error", "errored", "fail", "timeout",
                           "timed_out"))
"""A script's own `status` for a request that got no sample."""
RESPONSE_KEYS = ("choices", "meta_info", "outputs", "candidates")
FINISH_WORDS: dict[str, Finish] = {
    **dict.fromkeys(("stop", "eos", "eos_token", "stop_sequence", "end_turn", "completed",
                     "finished"), "stop"),
    **dict.fromkeys(("length", "max_tokens", "max_output_tokens", "max_new_tokens",
                     "model_context_window_exceeded", "token_limit", "max_length"), "length"),
    **dict.fromkeys(("abort", "aborted", "cancelled", "canceled", "time_limit", "expired"),
                    "abort"),
    **dict.fromkeys(("error", "failed", "insufficient_system_resource"), "error"),
    **dict.fromkeys(("content_filter", "refusal", "safety", "recitation", "blocklist",
                     "prohibited_content", "spii", "image_safety"), "filter"),
    **dict.fromkeys(("tool_calls", "function_call", "tool_use"), "tool"),
}
LIMIT_KEYS = ("max_completion_tokens", "max_tokens", "max_new_tokens", "max_output_tokens",
              "maxOutputTokens")
LIMIT_HOLDERS = ("request", "body", "params", "sampling_params", "generationConfig",
                 "parameters")


def count(value: Any) -> int | None:
    """A token count: a whole number >= 0 (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def dig(rec: Any, *keys: str | int) -> Any:
    """rec[k0][k1]... or None (never raises)."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(rec, list) or not rec or key >= len(rec):
                return None
            rec = rec[key]
        elif isinstance(rec, dict):
            rec = rec.get(key)
        else:
            return None
    return rec


def looks_like_response(rec: Any) -> bool:
    if not isinstance(rec, dict):
        return False
    if any(k in rec for k in RESPONSE_KEYS):
        return True
    return (isinstance(rec.get("content"), list) and "stop_reason" in rec) or (
        isinstance(rec.get("output"), list) and "status" in rec)


def join_parts(parts: Any, skip_thought: bool = False) -> str | None:
    """Text of a list of content parts/blocks (`{"type": "text", "text": ...}`)."""
    if not isinstance(parts, list):
        return None
    texts = [str(p["text"]) for p in parts if isinstance(p, dict)
             and isinstance(p.get("text"), str) and p.get("type", "text") in ("text", "output_text")
             and not (skip_thought and p.get("thought") is True)]
    return "".join(texts) if texts else None


def text_of(body: Rec) -> tuple[str, str | None] | None:
    """(shape, text) of the first rule that recognises the record; text None: known, no text."""
    choice = dig(body, "choices", 0)
    if isinstance(choice, dict):
        msg = choice.get("message")
        if isinstance(msg, dict):
            content = msg.get("content")
            if refused(body):
                return "openai-chat", msg["refusal"]  # the model's refusal is its answer
            return "openai-chat", content if isinstance(content, str) else join_parts(content)
        if "text" in choice:
            return "openai-completion", _str(choice.get("text"))
    if "meta_info" in body:
        return "sglang", _str(body.get("text"))
    out0 = dig(body, "outputs", 0)
    if isinstance(out0, dict) and "text" in out0:
        return "vllm-offline", _str(out0.get("text"))
    if body.get("object") == "response" or (isinstance(body.get("output"), list)
                                            and "status" in body):
        items = body.get("output") or []
        text = _str(body.get("output_text")) or "".join(
            join_parts(i.get("content")) or "" for i in items
            if isinstance(i, dict) and i.get("type") == "message")
        return "openai-responses", text
    if isinstance(body.get("content"), list) and ("stop_reason" in body
                                                  or body.get("type") == "message"):
        return "anthropic", join_parts(body["content"]) or ""
    cand = dig(body, "candidates", 0)
    if isinstance(cand, dict):
        return "gemini", join_parts(dig(cand, "content", "parts"), skip_thought=True) or ""
    return _other_text(body)


def _other_text(body: Rec) -> tuple[str, str | None] | None:
    gen = body.get("generated_text")
    if isinstance(gen, str):
        return ("tgi" if "details" in body else "flat"), gen
    if isinstance(gen, list):
        return "hf-pipeline", _last_assistant(gen)
    for key in FLAT_TEXT:
        value = body.get(key)
        if isinstance(value, str):
            return "flat", value
    for key in FLAT_TEXT[:3]:  # `"response": null`: the client wrote the record without one
        if key in body and body[key] is None:
            return "flat", None
    for key in ("messages", "conversations"):
        convo = body.get(key)
        if isinstance(convo, list) and convo:
            return "chat-dataset", _last_assistant(convo)
    return None


def _last_assistant(messages: list[Any]) -> str | None:
    last = messages[-1]
    if not isinstance(last, dict):
        return None
    if last.get("role") in ASSISTANT_ROLES or last.get("from") in ASSISTANT_ROLES:
        value = last.get("content", last.get("value"))
        return value if isinstance(value, str) else join_parts(value)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def finish_of(body: Rec, outer: Rec) -> tuple[str, int | None] | None:
    """(the raw finish reason, the limit it names) from wherever the shape keeps it."""
    raw = dig(body, "choices", 0, "finish_reason")
    if refused(body):  # OpenAI: a refusal stops with "stop"; it is a filtered answer
        return "refusal", None
    if raw is None:
        raw = dig(body, "outputs", 0, "finish_reason")
    meta = dig(body, "meta_info", "finish_reason")
    if raw is None and isinstance(meta, dict):
        length = count(meta.get("length")) if meta.get("type") == "length" else None
        return (str(meta["type"]), length) if meta.get("type") else None
    if raw is None and isinstance(meta, str):  # very old SGLang: "FINISH_LENGTH: 128"
        word, _, n = meta.partition(":")
        kind = word.strip().upper().removeprefix("FINISH_")
        return ("length" if "LENGTH" in kind else kind.lower()), (
            int(n) if n.strip().isdigit() else None)
    if raw is None and "status" in body and isinstance(body.get("output"), list):
        reason = dig(body, "incomplete_details", "reason")
        raw = reason if body.get("status") == "incomplete" and reason else body.get("status")
    if raw is None:
        raw = (body.get("stop_reason") if "content" in body else None) or dig(
            body, "candidates", 0, "finishReason") or dig(body, "details", "finish_reason")
    if raw is None:
        raw = next((v for r in (body, outer) for k in ("finish_reason", "stop_reason")
                    if isinstance(v := r.get(k), str) and v.lower() in FINISH_WORDS), None)
    return (str(raw), None) if isinstance(raw, str) and raw else None


def normalize_finish(raw: str) -> Finish:
    return FINISH_WORDS.get(raw.lower(), "other")


def _first_count(*candidates: Any) -> int | None:
    for value in candidates:
        n = count(value)
        if n is not None:
            return n
    return None


def tokens_of(body: Rec, outer: Rec) -> int | None:
    usage, meta = body.get("usage"), body.get("meta_info")
    # Each source only where the record has it: this runs for every sample read.
    found = _first_count(usage.get("completion_tokens"), usage.get("output_tokens")) \
        if isinstance(usage, dict) else None
    if found is None and isinstance(meta, dict):
        found = count(meta.get("completion_tokens"))
    if found is not None:
        return found
    found = _first_count(dig(body, "details", "generated_tokens"),
                         body.get("generated_token_count"))
    if found is not None:
        return found
    gemini = body.get("usageMetadata")
    if isinstance(gemini, dict) and count(gemini.get("candidatesTokenCount")) is not None:
        return (count(gemini.get("candidatesTokenCount")) or 0) + (
            count(gemini.get("thoughtsTokenCount")) or 0)
    # A choice's logprobs hold one entry per generated token (chat: `logprobs.content`,
    # completions: `logprobs.tokens`, in OpenAI's `ChoiceLogprobs` / `Logprobs` types).
    for ids in (dig(body, "outputs", 0, "token_ids"), body.get("output_ids"),
                dig(body, "choices", 0, "token_ids"), dig(body, "choices", 0, "logprobs",
                                                          "content"),
                dig(body, "choices", 0, "logprobs", "tokens")):
        if isinstance(ids, list):
            return len(ids)
    return _flat(outer, ("completion_tokens", "output_tokens", "num_generated_tokens",
                         "num_output_tokens", "generated_tokens", "num_completion_tokens"))


def prompt_tokens_of(body: Rec, outer: Rec) -> int | None:
    usage, meta = body.get("usage"), body.get("meta_info")
    found = _first_count(usage.get("prompt_tokens"), usage.get("input_tokens")) \
        if isinstance(usage, dict) else None
    if found is None and isinstance(meta, dict):
        found = count(meta.get("prompt_tokens"))
    if found is None:
        found = count(dig(body, "usageMetadata", "promptTokenCount"))
    if found is not None:
        return found
    ids = body.get("prompt_token_ids")
    if isinstance(ids, list):
        return len(ids)
    return _flat(outer, ("prompt_tokens", "input_tokens", "input_token_count",
                         "num_input_tokens", "num_prompt_tokens"))


def _flat(rec: Rec, keys: tuple[str, ...]) -> int | None:
    return next((count(rec[k]) for k in keys if count(rec.get(k)) is not None), None)


def reasoning_of(body: Rec, outer: Rec) -> str | None:
    """The structured reasoning text ("" when present but empty), or None when there is none."""
    msg = dig(body, "choices", 0, "message")
    for holder in (msg, dig(outer, "messages", -1) if isinstance(outer.get("messages"), list)
                   else None, body, outer):
        if isinstance(holder, dict):
            for key in ("reasoning_content", "reasoning", "thinking"):
                value = holder.get(key)
                if isinstance(value, str):
                    return value
    content = body.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking"):
            return str(block.get("thinking") or block.get("data") or "")
    parts = dig(body, "candidates", 0, "content", "parts")
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and part.get("thought") is True:
            return str(part.get("text") or "")
    output = body.get("output")
    for item in output if isinstance(output, list) else ():
        if isinstance(item, dict) and item.get("type") == "reasoning":
            return join_parts(item.get("summary") or item.get("content")) or "…"
    return None


_LIMIT_KEYS = frozenset(LIMIT_KEYS)
_LIMIT_HOLDERS = frozenset(LIMIT_HOLDERS)


def _limit_in(rec: Rec) -> int | None:
    for key in sorted(rec.keys() & _LIMIT_KEYS, key=LIMIT_KEYS.index):
        if count(rec[key]):
            return count(rec[key])
    return None


def limit_of(body: Rec, outer: Rec) -> int | None:
    """The max-token limit echoed in the record (top level or under a request holder)."""
    for rec in (outer, body) if body is not outer else (outer,):
        found = _limit_in(rec)
        if found is None:
            found = next((n for h in sorted(rec.keys() & _LIMIT_HOLDERS, key=LIMIT_HOLDERS.index)
                          if isinstance(rec[h], dict) and (n := _limit_in(rec[h]))), None)
        if found:
            return found
    return None


def refused(body: Rec) -> bool:
    """OpenAI chat's `message.refusal` is set (its `content` is then null)."""
    msg = dig(body, "choices", 0, "message")
    return isinstance(msg, dict) and isinstance(msg.get("refusal"), str) and bool(
        msg["refusal"]) and not msg.get("content")


def tool_call(body: Rec) -> bool:
    calls = dig(body, "choices", 0, "message", "tool_calls")
    return isinstance(calls, list) and bool(calls)
