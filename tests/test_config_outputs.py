"""The `[outputs]` table: globs and field paths; unknown keys and bad paths are one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dash.commands.cli import main
from dash.core.errors import ConfigError
from dash.sources.config_files import build_config


def cfg_from(tmp_path: Path, toml: str, flags: dict | None = None):
    (tmp_path / "kdash.toml").write_text(toml)
    return build_config(flags or {}, cwd=tmp_path, user_file=tmp_path / "none.toml")


def test_the_table_names_files_and_fields(tmp_path: Path) -> None:
    cfg = cfg_from(tmp_path, '[outputs]\nfiles = ["out/*.jsonl"]\ntext = "result.answer"\n'
                             'finish = "meta.stop"\ntokens = "meta.n"\nreasoning = "thinking"\n'
                             'max_tokens = 10240\nexpect_reasoning = true\n')
    assert cfg.outputs == ("out/*.jsonl",)
    f = cfg.output_fields
    assert (f.text, f.finish, f.tokens, f.reasoning) == (("result", "answer"), ("meta", "stop"),
                                                         ("meta", "n"), ("thinking",))
    assert f.max_tokens == 10240 and f.expect_reasoning is True and f.samples is True


def test_flags_replace_the_files_and_keep_the_fields(tmp_path: Path) -> None:
    cfg = cfg_from(tmp_path, '[outputs]\nfiles = "a/*.jsonl"\ntext = "x.y"\n',
                   {"outputs": ["b/*.jsonl"]})
    assert cfg.outputs == ("b/*.jsonl",) and cfg.output_fields.text == ("x", "y")


def test_the_plain_list_still_works(tmp_path: Path) -> None:
    assert cfg_from(tmp_path, 'outputs = ["o/*.jsonl"]\n').outputs == ("o/*.jsonl",)


@pytest.mark.parametrize(("toml", "says"), [
    ('[outputs]\ntexts = "a"\n', "unknown outputs setting 'texts' (did you mean 'text'?)"),
    ('[outputs]\ntext = "a..b]"\n', "bad field path"),
    ('[outputs]\nmax_tokens = -1\n', "max_tokens must be a whole number > 0"),
    ('[outputs]\nsamples = "no"\n', "samples must be true or false"),
    ('[outputs]\nfiles = 3\n', "outputs.files must be a glob"),
    ('[alerts]\ntruncated_share = "x"\n', "truncated_share must be a number"),
])
def test_bad_values_are_one_line_errors(tmp_path: Path, toml: str, says: str, capsys) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        cfg_from(tmp_path, toml)
    (tmp_path / "kdash.toml").write_text(toml)
    assert main(["--config", str(tmp_path / "kdash.toml"), "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
