"""The keys a server prints with its arguments are kept as `***`: in the arguments, in the
event's message, and so in everything kdash prints, exports and remembers."""

from __future__ import annotations

import json

import pytest

from dash.core.log.parse import parse_line

LINES = [
    "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', port=30000, "
    "api_key='sk-sglang-1', admin_api_key='sk-admin-2', mem_fraction_static=0.88)",
    "[2026-01-02 10:00:00] server_args={'model_path': 'm', 'api_key': 'sk-sglang-1', 'port': 3}",
    "INFO 01-02 10:00:00 [utils.py:253] non-default args: {'model': 'm', "
    "'api_key': ['sk-vllm-3'], 'hf_token': 'hf_abc', 'port': 8100}",
]


@pytest.mark.parametrize("line", LINES)
def test_secrets_in_the_arguments_are_redacted(line: str) -> None:
    rec = parse_line(line, 1)
    assert rec is not None and rec["event"] == "server_args"
    text = json.dumps(rec)
    assert "sk-" not in text and "hf_abc" not in text
    assert rec["args"]["api_key"] == "***" and "'***'" in rec["message"]
    assert rec["port"] in (30000, 3, 8100)  # the other arguments as before


def test_an_unset_key_stays_none_and_the_message_untouched() -> None:
    line = "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', api_key=None, port=1)"
    rec = parse_line(line, 1)
    assert rec is not None and rec["args"]["api_key"] is None
    assert rec["message"].endswith("api_key=None, port=1)")


def test_a_launch_remembered_with_a_key_is_read_back_without_it() -> None:
    from dash.core.launch import launch_from_json

    launch = launch_from_json({"key": "k", "args": {"api_key": "sk-old-file", "port": 1,
                                                    "admin_api_key": None}})
    assert launch is not None and launch.args == {"api_key": "***", "port": 1,
                                                  "admin_api_key": None}
