"""Config precedence and one-line errors, through the real CLI entry point."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.core.config import merge_layers
from dash.core.errors import ConfigError
from dash.sources.config_files import build_config


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_later_layers_win_user_then_cwd_then_file_then_flags(tmp_path: Path) -> None:
    user = _write(tmp_path / "user.toml", 'log = "user.log"\nrefresh = 5\n[expect]\nB1 = 1\n')
    _write(tmp_path / "kdash.toml", 'log = "cwd.log"\nurl = "http://127.0.0.1:8000"\n')
    extra = _write(tmp_path / "extra.toml", 'url = "http://127.0.0.1:9000"\n[expect]\nB2 = 2\n')
    cfg = build_config({"refresh": 2.0, "expect": ["B1=10"]}, config_file=extra, cwd=tmp_path,
                       user_file=user)
    assert cfg.log == Path("cwd.log")
    assert cfg.url == "http://127.0.0.1:9000"
    assert cfg.refresh == 2.0
    assert dict(cfg.expect) == {"B1": 10, "B2": 2}


def test_defaults_and_emptiness(tmp_path: Path) -> None:
    cfg = build_config({}, cwd=tmp_path, user_file=tmp_path / "none.toml")
    assert cfg.url is None and cfg.http_enabled  # found in the log's server_args, else default
    assert cfg.is_empty()
    assert not build_config({"url": "http://h:1"}, cwd=tmp_path, user_file=tmp_path / "n").is_empty()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("log = 3\n", "log must be a path"),
        ("refresh = -1\n", "refresh must be a positive number"),
        ("bogus = 1\n", "unknown setting 'bogus'"),
        ("gpus = 'a,b'\n", "expected GPU indices"),
        ("[expect]\nB1 = 'many'\n", "must be a whole number"),
        ("[alerts]\nnot_a_threshold = 1\n", "unknown alert setting"),
        ("log = [\n", "invalid TOML"),
        ("metrics_port = 70000\n", "a port number"),
        ("nvml_interval = 0.1\n", "NVML holds a driver lock"),
        ("[alerts]\nkv_usage = 90\n", "kv_usage = 90: a ratio 0..1; did you mean 0.90?"),
        ("[alerts]\nplateau_drop = 1.5\n", "plateau_drop = 1.5: a ratio 0..1"),
        ("[alerts]\ndown_polls = 0\n", "down_polls = 0: a count, a whole number of at least 1"),
        ("[alerts]\nretract_min_events = 0.5\n", "a count, a whole number of at least 1"),
        ("[alerts]\nsilent_after_s = -30\n", "silent_after_s = -30: a duration in seconds"),
        ("[alerts]\ngpu_free_min_gb = -1\n", "gpu_free_min_gb = -1: must be 0 or more"),
    ],
)
def test_bad_config_is_one_line_exit_2(tmp_path: Path, capsys, text: str, message: str) -> None:
    cfg = _write(tmp_path / "k.toml", text)
    assert main(["--log", str(tmp_path / "x.log"), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and err.startswith("kdash: ")
    with pytest.raises(ConfigError):
        build_config({}, config_file=cfg, cwd=tmp_path, user_file=tmp_path / "none.toml")


@pytest.mark.parametrize(("text", "message"), [
    ("[alerts]\nplateu_drop = 0.3\n",
     "{f} [alerts]: unknown alert setting 'plateu_drop' (did you mean 'plateau_drop'?)"),
    ("[alerts]\nzzzz = 1\n", "{f} [alerts]: unknown alert setting 'zzzz'"),
    ("[alerts]\nplateau_drop = 30.5\n", "{f} [alerts]: plateau_drop = 30.5: a ratio 0..1"),
    ("ouptuts = 'out/*.jsonl'\n", "{f}: unknown setting 'ouptuts' (did you mean 'outputs'?)"),
    ("zzzz = 1\n", "{f}: unknown setting 'zzzz'"),
])
def test_a_bad_setting_names_its_file_and_the_setting_meant(tmp_path: Path, capsys, text: str,
                                                            message: str) -> None:
    cfg = _write(tmp_path / "k.toml", text)
    assert main(["--once", "--url", "", "--config", str(cfg)]) == 2
    assert capsys.readouterr().err == f"kdash: {message.format(f=cfg)}\n"
    assert main(["outputs", "--config", str(cfg), str(cfg)]) == 2
    assert capsys.readouterr().err == f"kdash: {message.format(f=cfg)}\n"


def test_a_misspelt_setting_from_another_layer_is_named_too() -> None:
    with pytest.raises(ConfigError, match=r"^flags: unknown setting 'ouptuts' "
                                          r"\(did you mean 'outputs'\?\)$"):
        merge_layers([("flags", {"ouptuts": "x"})])


@pytest.mark.parametrize(
    "argv",
    [["--json"], ["--bogus"], ["--log"], ["--refresh", "x", "--log", "a"], ["--expect", "B1", "--log", "a"],
     ["--config", "/nonexistent/k.toml"], ["serve", "--log", "a"], ["summary"], ["export", "a", "--format", "xml"]],
)
def test_usage_errors_are_one_line_exit_2(argv: list[str], capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kdash: ") and err.count("\n") == 1


def test_nothing_configured_says_what_to_pass(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "--log" in err and "kdash demo" in err and err.count("\n") == 1


def test_cuda_visible_devices_selects_gpus(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    cfg = build_config({"log": "a"}, cwd=tmp_path, user_file=tmp_path / "none.toml")
    assert cfg.gpus == (2, 3)
    assert build_config({"log": "a", "gpus": "0"}, cwd=tmp_path, user_file=tmp_path / "n").gpus == (0,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("backfill_bytes = inf\n", "backfill_bytes must be a whole number"),
        ("refresh = nan\n", "refresh must be a positive number"),
        ("http_interval = inf\n", "http_interval must be a positive number"),
        ("[expect]\nB1 = inf\n", "must be a whole number"),
        ("[expect]\nB1 = 1.5\n", "must be a whole number"),
        ("[expect]\nB1 = true\n", "must be a whole number"),
        ("gpus = [1e400]\n", "expected GPU indices"),
        ("gpus = [true]\n", "expected GPU indices"),
        ("[alerts]\ndown_polls = inf\n", "down_polls must be a number"),
        ("url = 'not a url'\n", "url must be an http:// or https:// URL"),
        ("url = 'http://[::1'\n", "url must be an http:// or https:// URL"),
        ("url = 'ftp://example.com'\n", "url must be an http:// or https:// URL"),
        ("webhook = 'hooks.example.com/x'\n", "webhook must be an http:// or https:// URL"),
    ],
)
def test_non_finite_and_malformed_values_are_one_line_exit_2(tmp_path: Path, capsys, text: str,
                                                             message: str) -> None:
    cfg = _write(tmp_path / "k.toml", text)
    assert main(["--log", str(tmp_path / "x.log"), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("kdash: ") and err.count("\n") == 1


def test_a_binary_config_file_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "k.toml"
    cfg.write_bytes(b"\xff\xfe\x00log = 3\x9c")
    assert main(["--log", str(tmp_path / "x.log"), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and err.count("\n") == 1


def test_flag_values_keep_working(tmp_path: Path) -> None:
    cfg = build_config({"url": "http://127.0.0.1:8000", "expect": ["B1=10"], "refresh": 0.5,
                        "gpus": "0,3"}, cwd=tmp_path, user_file=tmp_path / "none.toml")
    assert (cfg.url, dict(cfg.expect), cfg.refresh, cfg.gpus) == (
        "http://127.0.0.1:8000", {"B1": 10}, 0.5, (0, 3))
    assert build_config({"url": ""}, cwd=tmp_path, user_file=tmp_path / "n").url == ""


def test_a_reader_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    """`kdash --once --json | head -c 10`: no traceback, exit 0."""
    import subprocess
    import sys

    log = tmp_path / "server.log"
    log.write_text("".join(
        f"[2026-03-01 12:00:{i:02d}] Decode batch, #running-req: 3, #token: 100, token usage: 0.01,"
        f" cuda graph: True, gen throughput (token/s): {100 + i}.00, #queue-req: 0\n"
        for i in range(40)))
    proc = subprocess.Popen([sys.executable, "-m", "dash", "--once", "--json", "--log", str(log),
                             "--url", ""], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path)})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before kdash writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_no_http_and_an_empty_url_turn_http_off(tmp_path: Path) -> None:
    from dash.commands.cli import _dashboard_parser
    from dash.commands.options import config_from

    for argv in (["--no-http"], ["--url", ""], ["--url", "http://h:1", "--no-http"]):
        ns = _dashboard_parser().parse_args(["--log", "x.log", *argv])
        assert config_from(ns).url == "" and not config_from(ns).http_enabled
    _write(tmp_path / "kdash.toml", 'url = ""\n')
    assert not build_config({}, cwd=tmp_path, user_file=tmp_path / "n").http_enabled
    assert "--no-http" in _dashboard_parser().format_help()


def test_a_home_that_cannot_be_entered_is_a_notice_and_the_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # sudo keeping HOME=/root, or setpriv: looking inside the home directory is refused.
    home = tmp_path / "root"
    home.mkdir()
    real_stat = Path.stat

    def stat(self: Path, *args, **kwargs):
        if str(self).startswith(str(home)):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    notices: list[str] = []
    cfg = build_config({"log": "x.log"}, cwd=tmp_path, user_file=home / ".config/kdash/config.toml",
                       notices=notices)
    assert cfg.log == Path("x.log") and cfg.refresh == 1.0
    assert len(notices) == 1 and "Permission denied" in notices[0] and "defaults" in notices[0]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.log").write_text("")
    assert main(["--once", "--window", "0", "--log", "x.log", "--no-http"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kdash: note: ") and "Traceback" not in err


def test_a_log_that_is_a_directory_or_unreadable_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "logs").mkdir()
    assert main(["--log", str(tmp_path / "logs"), "--no-http"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err
    log = tmp_path / "server.log"
    log.write_text("")
    real_open = os.open

    def refuse(path, flags, *args):  # root reads everything: refuse the way a chmod 000 does
        if str(path) == str(log):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse)
    assert main(["--once", "--log", str(log), "--no-http"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Permission denied" in err and "--log" in err
    # Not there yet is fine: the server may start after kdash.
    assert main(["--once", "--window", "0", "--log", str(tmp_path / "later.log"), "--no-http"]) == 0
