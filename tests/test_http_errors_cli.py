"""A server that answers every poll with an error, through the CLI: real HTTP servers on
127.0.0.1 that want an API key (401 without `Authorization: Bearer KEY`) or answer 503 for
ever. `kdash check` must not say OK, `--once --json` carries the alert, and the key kdash is
given is sent but never printed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.http.fakeserver import FakeServer, Route, recorded

from dash.commands.cli import main
from dash.sim import SimRun

KEY = "sk-kdash-test-7f3a9c"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def guarded() -> Iterator[FakeServer]:
    """SGLang 0.5.23's answers behind a key on every route (the user trial's server)."""
    with FakeServer(recorded("sglang-0.5.23"), api_key=KEY) as srv:
        yield srv


def _check(url: str, *extra: str) -> list[str]:
    return ["check", "--window", "1", "--url", url, *extra]


def test_without_the_key_check_warns_with_the_fix_not_ok(
        guarded: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(guarded.url)) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1, out
    assert out[0].startswith("WARN http_auth: the server wants an API key: HTTP 401 "
                             "Unauthorized to every route kdash asks; hint: ")
    assert out[0].endswith("never shows it.")  # the whole fix fits the line
    assert "The server was started with --api-key" in out[0]
    assert "--api-key KEY" in out[0]
    assert set(guarded.auth) == {None}  # no key given: none sent


def test_with_the_key_it_is_sent_as_a_bearer_and_check_is_ok(
        guarded: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(guarded.url, "--api-key", KEY)) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK kdash: http up") and KEY not in out
    assert guarded.auth and set(guarded.auth) == {f"Bearer {KEY}"}


def test_a_wrong_key_says_so_and_is_never_printed(
        guarded: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = "sk-not-the-servers-0000"
    assert main(_check(guarded.url, "--api-key", wrong)) == 1
    out = capsys.readouterr().out
    assert out.startswith("WARN http_auth: the server refuses kdash's API key: HTTP 401")
    assert wrong not in out and "sends a key" not in out  # the check line is message + hint


def test_once_json_carries_the_alert_and_not_the_key(
        guarded: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--once", "--json", "--window", "1", "--url", guarded.url,
                 "--api-key", "sk-wrong-1111"]) == 0
    text = capsys.readouterr().out
    assert "sk-wrong-1111" not in text
    doc = json.loads(text)
    [alert] = [a for a in doc["alerts"] if a["id"] == "http_auth"]
    assert alert["severity"] == "warn" and "sends a key (not shown)" in alert["evidence"]
    assert doc["server"]["http"]["state"] == "degraded"
    assert doc["server"]["http"]["key_sent"] is True
    assert {f["path"]: f["status"] for f in doc["server"]["http"]["failing"]} == {
        "/metrics": 401, "/ready": 401, "/server_info": 401, "/model_info": 401}


def test_the_key_from_kdash_toml_and_from_vllms_variable(
        guarded: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kdash.toml").write_text(f'[http]\napi_key = "{KEY}"\n')
    assert main(_check(guarded.url)) == 0
    (tmp_path / "kdash.toml").unlink()
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    assert main(_check(guarded.url)) == 0
    assert KEY not in capsys.readouterr().out
    assert set(guarded.auth) == {f"Bearer {KEY}"}


def test_an_empty_key_switches_vllms_variable_off(
        guarded: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A shell that exported VLLM_API_KEY for one server, kdash pointed at another without one.
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    assert main([*_check(guarded.url), "--api-key", ""]) == 1  # WARN http_auth
    assert set(guarded.auth) == {None}
    (tmp_path / "kdash.toml").write_text('[http]\napi_key = ""\n')
    assert main(_check(guarded.url)) == 1
    assert set(guarded.auth) == {None}
    assert KEY not in capsys.readouterr().out


def test_a_bad_key_in_a_config_is_one_line_without_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kdash.toml").write_text('[http]\napi_key = "two words"\napi_kye = 1\n')
    assert main(["--once", "--url", "http://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "two words" not in err and "[http]" in err


def test_503_for_ever_is_crit_in_check(capsys: pytest.CaptureFixture[str]) -> None:
    busy = {p: Route(503, b'{"detail":"Service Unavailable"}') for p in
            ("/metrics", "/ready", "/server_info", "/model_info")}
    with FakeServer(busy) as srv:
        assert main(_check(srv.url)) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("CRIT http_errors: the server answers HTTP 503 Service Unavailable "
                             "to every route kdash asks; hint: Not ready, or overloaded")
    assert out[0].endswith("See the end of the server log.")


@pytest.fixture
def sim_with_key(tmp_path: Path) -> Iterator[SimRun]:
    # A simulated SGLang started with --api-key: /metrics and /ready stay open, as they do.
    run = SimRun(tmp_path / "run", "healthy", start_epoch=time.time() - 120, api_key=KEY)
    run.start(background=False)
    run.advance_to(120)
    try:
        yield run
    finally:
        run.stop()


def test_a_simulated_sglang_with_a_key_loses_only_its_info_routes(
        sim_with_key: SimRun, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _check(sim_with_key.url, "--log", str(sim_with_key.server_log))
    assert main(argv) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("WARN http_auth: the server wants an API key: HTTP 401 Unauthorized "
                           "on /server_info, /model_info")
    assert main([*argv, "--api-key", KEY]) == 0
    assert capsys.readouterr().out.startswith("OK kdash: log live, http up")
