"""Field detection on each record shape, written from the documented response formats (field
names as OpenAI's SDK types, SGLang's tokenizer manager, vLLM's outputs and protocol, Anthropic's
and Gemini's types define them)."""

from __future__ import annotations

import json

import pytest

from dash.core.samples import reasoning
from dash.core.samples.fields import Extractor
from dash.core.samples.fieldspec import OutputFields
from dash.core.samples.paths import parse_path

OPENAI_CHAT = {
    "id": "chatcmpl-9x1", "object": "chat.completion", "created": 1767000000, "model": "o4-mini",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is 42.",
                                         "refusal": None}, "logprobs": None,
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 57, "completion_tokens": 812, "total_tokens": 869,
              "completion_tokens_details": {"reasoning_tokens": 768}},
}
VLLM_CHAT_CUT_WHILE_THINKING = {
    "id": "chatcmpl-8f2", "object": "chat.completion", "model": "Qwen/Qwen3-32B",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                         "reasoning": "Okay, let me work through it ...",
                                         "tool_calls": []},
                 "logprobs": None, "finish_reason": "length", "stop_reason": None}],
    "usage": {"prompt_tokens": 143, "total_tokens": 10383, "completion_tokens": 10240},
}
SGLANG_CHAT = {
    "id": "x", "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris.",
                                         "reasoning_content": "The capital of France..."},
                 "finish_reason": "stop", "matched_stop": 151645}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 40, "reasoning_tokens": 35},
}
COMPLETION = {
    "id": "cmpl-3a", "object": "text_completion", "model": "deepseek-ai/DeepSeek-R1",
    "choices": [{"index": 0, "text": "Let me think.\n...\n</think>\n\nThe answer is 7.",
                 "logprobs": None, "finish_reason": "stop", "stop_reason": None}],
    "usage": {"prompt_tokens": 31, "total_tokens": 1650, "completion_tokens": 1619},
}
SGLANG_GENERATE = {
    "text": "Okay, so we need the sum of ...", "output_ids": [21, 3443, 11],
    "meta_info": {"id": "5f1c0c0e2b7a4c1f", "finish_reason": {"type": "length", "length": 10240},
                  "prompt_tokens": 812, "weight_version": "default", "num_retractions": 0,
                  "reasoning_tokens": 0, "completion_tokens": 10240, "cached_tokens": 512,
                  "e2e_latency": 93.41},
}
SGLANG_OLD = {"text": "abc", "meta_info": {"id": "1", "finish_reason": "FINISH_LENGTH: 128",
                                           "prompt_tokens": 5, "completion_tokens": 128}}
VLLM_OFFLINE = {
    "request_id": "0", "prompt": "<|im_start|>user\n...", "prompt_token_ids": [151644, 872],
    "outputs": [{"index": 0, "text": "...</think>\n\nFinal answer: 12", "token_ids": [151667, 198],
                 "cumulative_logprob": None, "finish_reason": "stop", "stop_reason": None}],
    "finished": True, "num_cached_tokens": 0,
}
BATCH_OK = {"id": "vllm-5c1e", "custom_id": "req-00017", "response": {
    "status_code": 200, "request_id": "vllm-batch-91aa",
    "body": {"id": "chatcmpl-..", "object": "chat.completion", "model": "m",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "..."},
                          "finish_reason": "length"}],
             "usage": {"prompt_tokens": 50, "total_tokens": 2098, "completion_tokens": 2048}}},
    "error": None}
BATCH_ERROR = {"id": "vllm-77d0", "custom_id": "req-00018",
               "response": {"status_code": 400, "request_id": "b", "body": None},
               "error": "This model's maximum context length is 32768 tokens."}
RESPONSES = {"id": "resp_1", "object": "response", "status": "incomplete",
             "incomplete_details": {"reason": "max_output_tokens"}, "max_output_tokens": 4096,
             "output": [{"type": "reasoning", "id": "rs_1", "summary": []}],
             "usage": {"input_tokens": 40, "output_tokens": 4096, "total_tokens": 4136}}
ANTHROPIC = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude",
             "stop_reason": "max_tokens", "stop_sequence": None,
             "content": [{"type": "thinking", "thinking": "Let me ...", "signature": "EuYB"},
                         {"type": "text", "text": "Partial answ"}],
             "usage": {"input_tokens": 120, "output_tokens": 4096}}
GEMINI = {"candidates": [{"content": {"role": "model", "parts": [
    {"thought": True, "text": "..."}, {"text": "Answer ..."}]}, "finishReason": "MAX_TOKENS",
    "index": 0}], "usageMetadata": {"promptTokenCount": 15, "candidatesTokenCount": 1800,
                                    "thoughtsTokenCount": 6392, "totalTokenCount": 8207}}
FLAT = {"id": "q-0013", "prompt": "...", "response": "...", "finish_reason": "length",
        "max_tokens": 10240, "completion_tokens": 10240}
TGI = {"generated_text": "hi", "details": {"finish_reason": "eos_token", "generated_tokens": 3}}


def one(record: object, spec: OutputFields | None = None):
    (sample,) = Extractor(spec).samples(json.loads(json.dumps(record)))
    return sample


@pytest.mark.parametrize(("record", "shape", "finish", "tokens", "prompt", "state", "empty"), [
    # 768 reasoning tokens counted, their text kept back (OpenAI's reasoning models)
    (OPENAI_CHAT, "openai-chat", "stop", 812, 57, "present", False),
    (VLLM_CHAT_CUT_WHILE_THINKING, "openai-chat", "length", 10240, 143, "present", True),
    (SGLANG_CHAT, "openai-chat", "stop", 40, 12, "present", False),
    (COMPLETION, "openai-completion", "stop", 1619, 31, "present", False),
    (SGLANG_GENERATE, "sglang", "length", 10240, 812, "absent", False),
    (SGLANG_OLD, "sglang", "length", 128, 5, "absent", False),
    (VLLM_OFFLINE, "vllm-offline", "stop", 2, 2, "present", False),
    (BATCH_OK, "openai-chat", "length", 2048, 50, "absent", False),
    (RESPONSES, "openai-responses", "length", 4096, 40, "present", True),
    (ANTHROPIC, "anthropic", "length", 4096, 120, "present", False),
    (GEMINI, "gemini", "length", 8192, 15, "present", False),
    (FLAT, "flat", "length", 10240, None, "absent", False),
    (TGI, "tgi", "stop", 3, None, "absent", False),
])
def test_each_documented_shape(record, shape, finish, tokens, prompt, state, empty) -> None:
    s = one(record)
    assert (s.shape, s.finish, s.tokens, s.prompt_tokens, s.reasoning, s.empty) == (
        shape, finish, tokens, prompt, state, empty)
    assert s.error is None


def test_limits_from_the_record() -> None:
    assert one(SGLANG_GENERATE).limit == 10240  # meta_info.finish_reason.length
    assert one(SGLANG_OLD).limit == 128
    assert one(FLAT).limit == 10240  # a request echo
    assert one(RESPONSES).limit == 4096
    assert one(OPENAI_CHAT).limit is None


@pytest.mark.parametrize("record", [
    BATCH_ERROR, {"error": {"message": "The input (40211 tokens) is longer than the model's "
                                       "context length (32768 tokens)."}},
    {"object": "error", "message": "bad", "type": "BadRequest", "param": None, "code": 400},
    {"custom_id": "req-42", "error": "Request timed out."},
    {"id": "q-9", "error": {"message": "...", "type": "BadRequestError", "code": 400}},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
])
def test_error_records(record) -> None:
    s = one(record)
    assert s.error and not s.empty


def test_a_batch_list_and_n_choices_are_several_samples() -> None:
    batch = [{"text": "A", "meta_info": {"id": "r0", "finish_reason": {"type": "stop", "matched": 2},
                                         "prompt_tokens": 9, "completion_tokens": 1}},
             {"text": "B ...", "meta_info": {"id": "r1", "finish_reason": {"type": "length",
                                                                           "length": 256},
                                             "prompt_tokens": 9, "completion_tokens": 256}}]
    got = Extractor().samples(batch)
    assert [(s.finish, s.tokens) for s in got] == [("stop", 1), ("length", 256)]
    n2 = {"choices": [{"message": {"content": "a"}, "finish_reason": "stop"},
                      {"message": {"content": "b"}, "finish_reason": "length"}],
          "usage": {"completion_tokens": 99}}
    assert [(s.finish, s.tokens) for s in Extractor().samples(n2)] == [("stop", None),
                                                                      ("length", None)]


def test_a_wrapper_around_the_response_keeps_the_request_echo() -> None:
    rec = {"request": {"max_tokens": 2048}, "response": OPENAI_CHAT}
    s = one(rec)
    assert (s.shape, s.tokens, s.limit) == ("openai-chat", 812, 2048)


def test_unknown_lines_give_no_sample() -> None:
    assert Extractor().samples({"idx": 1, "meta": {"x": 2}}) == []
    assert Extractor().samples(42) == []


def test_a_tool_call_is_not_an_empty_answer() -> None:
    rec = {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c"}]},
                        "finish_reason": "tool_calls"}]}
    s = one(rec)
    assert s.finish == "tool" and not s.empty


@pytest.mark.parametrize(("text", "state", "answer"), [
    ("<think>\nhmm\n</think>\n\nPi.", "present", "\n\nPi."),
    ("hmm, so\n</think>\n\nPi.", "present", "\n\nPi."),  # the template opened it
    ("<think>\n\n</think>\n\nPi.", "empty", "\n\nPi."),
    ("<think>\nstill thinking when cut", "open", ""),
    ("<seed:think>a</seed:think>b", "present", "b"),
    ("◁think▷a◁/think▷b", "present", "b"),
    ("[THINK]a[/THINK]b", "present", "b"),
    ("<|START_THINKING|>a<|END_THINKING|><|START_TEXT|>b", "present", "<|START_TEXT|>b"),
    ("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>b",
     "present", "b"),
    ("analysisWe need to add.assistantfinal4", "present", "4"),
    ("Here is my thought process: a Here is my response: b", "present", " b"),
    ("Just an answer.", "absent", "Just an answer."),
])
def test_reasoning_markers(text: str, state: str, answer: str) -> None:
    assert reasoning.split(text) == (state, answer)


def test_configured_paths_win_and_a_path_that_never_matches_is_counted() -> None:
    spec = OutputFields(text=parse_path("result.answer"), finish=parse_path("meta.stop"),
                        tokens=parse_path("meta.n"), reasoning=parse_path("thinking"),
                        prompt_tokens=parse_path("nowhere.at_all"))
    ex = Extractor(spec)
    rec = {"result": {"answer": "42"}, "meta": {"stop": "max_tokens", "n": 7}, "thinking": "so"}
    (s,) = ex.samples(rec)
    assert (s.finish, s.tokens, s.reasoning, s.chars) == ("length", 7, "present", 2)
    hits = {h.field: (h.hits, h.misses) for h in ex.take_hits()}
    assert hits == {"text": (1, 0), "finish": (1, 0), "tokens": (1, 0), "prompt_tokens": (0, 1),
                    "reasoning": (1, 0)}
    assert {h.field: (h.hits, h.misses) for h in ex.take_hits()}["text"] == (0, 0)


def test_paths_parse_both_spellings() -> None:
    assert parse_path("choices[0].message.content") == parse_path("choices.0.message.content") \
        == ("choices", 0, "message", "content")


# Shapes from the class of what clients write, each field named as its source defines it.
# OpenAI's `ChatCompletionMessage.refusal` (openai-python types/chat/chat_completion_message.py):
# the content is null and the refusal is the model's answer.
REFUSAL = {"id": "c", "object": "chat.completion", "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": None,
                             "refusal": "I'm sorry, I cannot help with that."},
     "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18}}


def test_a_refusal_is_a_filtered_answer_not_an_empty_one() -> None:
    s = one(REFUSAL)
    assert (s.finish, s.finish_raw, s.empty, s.chars) == ("filter", "refusal", False, 35)


def test_n_choices_keep_the_prompt_and_count_each_choice_by_its_logprobs() -> None:
    # OpenAI `ChoiceLogprobs.content` (chat) and `Logprobs.tokens` (completions): one entry a
    # token; `usage` covers every choice, its prompt counted once.
    chat = {"object": "chat.completion", "choices": [
        {"index": i, "message": {"role": "assistant", "content": t, "refusal": None},
         "logprobs": {"content": [{"token": w, "logprob": -0.1, "bytes": [], "top_logprobs": []}
                                  for w in t.split()], "refusal": None}, "finish_reason": f}
        for i, (t, f) in enumerate((("A", "stop"), ("B b", "length")))],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}
    cmpl = {"object": "text_completion", "choices": [
        {"index": 0, "text": " one", "finish_reason": "stop",
         "logprobs": {"tokens": [" one"], "token_logprobs": [-0.1], "top_logprobs": None,
                      "text_offset": [0]}},
        {"index": 1, "text": " two three", "finish_reason": "length",
         "logprobs": {"tokens": [" two", " three"], "token_logprobs": [-0.1, -0.2],
                      "top_logprobs": None, "text_offset": [0, 4]}}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}}
    for rec, prompt in ((chat, 9), (cmpl, 4)):
        got = Extractor().samples(rec)
        assert [(s.finish, s.tokens, s.prompt_tokens) for s in got] == [
            ("stop", 1, prompt), ("length", 2, prompt)]


@pytest.mark.parametrize("record", [
    {"prompt": "q", "responses": ["a", "bb", "ccc"]},
    {"prompt": "q", "outputs": ["a", "bb", "ccc"]},
    {"prompt": "q", "completions": [{"text": "a"}, {"text": "bb"}, {"text": "ccc"}]},
    {"prompt": "q", "generations": ["a", "bb", "ccc"], "max_tokens": 64},
])
def test_a_best_of_n_record_is_one_sample_per_response(record) -> None:
    got = Extractor().samples(record)
    assert [s.chars for s in got] == [1, 2, 3]


@pytest.mark.parametrize("record", [
    {"id": "q", "status": "failed", "response": None},
    {"id": "q", "status": "error", "message": "Connection refused"},
    {"id": "q", "status_code": 500, "response": None},
    {"id": "q", "success": False, "error_message": "timeout"},
    {"id": "q", "prompt": "p", "exception": "ReadTimeout('')"},
])
def test_a_scripts_failure_records_are_errors(record) -> None:
    (s,) = Extractor().samples(record)
    assert s.error and not s.empty


def test_flat_script_keys() -> None:
    # vLLM offline scripts write `outputs[0].text` as `text` beside the prompt.
    assert one({"prompt": "Q", "text": "Answer", "finish_reason": "stop"}).chars == 6
    # Eval records keep the reference under `answer`: the model's is the `prediction`.
    assert one({"question": "q", "answer": "gold", "prediction": "model says"}).chars == 10
    assert one({"prompt": "p", "response": None}).empty  # written without a response
    s = one({"prompt": "p", "output": "x", "num_output_tokens": 5, "num_input_tokens": 3})
    assert (s.tokens, s.prompt_tokens) == (5, 3)
    # ShareGPT `from` / Gemini-style `model` turns.
    assert one({"conversations": [{"from": "user", "value": "q"},
                                  {"from": "model", "value": "ans"}]}).chars == 3


@pytest.mark.parametrize(("text", "empty"), [
    ("<think>a</think>x<think>b</think>final", False),
    ("<think>a</think>\n<think>b</think>\n", True),
    ("<think>a</think>\n<think>still thinking", True),
])
def test_several_think_blocks_the_answer_follows_the_last(text, empty) -> None:
    assert one({"response": text, "finish_reason": "stop"}).empty is empty


def test_a_reasoning_token_count_without_text_is_reasoning_and_zero_is_not() -> None:
    # openai-python `CompletionUsage.completion_tokens_details.reasoning_tokens`
    chat = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                      "completion_tokens_details": {"reasoning_tokens": 0}}}
    assert one(chat).reasoning == "absent"
    chat["usage"]["completion_tokens_details"]["reasoning_tokens"] = 40
    assert one(chat).reasoning == "present"
