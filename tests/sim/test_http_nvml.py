"""The simulated server over real HTTP on 127.0.0.1, and the fake NVML following it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

GIB = 1024**3


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url + "/health", timeout=3)
    except urllib.error.HTTPError:
        return False
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ConnectionRefusedError)
    return False


def _metric(text: bytes, name: str) -> float:
    for line in text.decode().splitlines():
        if line.startswith(f"sglang:{name}{{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sglang:{name} in /metrics")


def test_endpoints_follow_the_log_through_a_crash(make_run, parse_log):
    run = make_run("oom-crash-restart")
    run.start(background=False)
    url = run.url
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
    run.advance_to(10)
    assert _refused(url)  # still loading weights: nothing listens yet
    run.advance_to(17)
    assert _get(url + "/health")[0] == 503 and _get(url + "/ready")[0] == 503
    run.advance_to(200)
    status, body = _get(url + "/server_info")
    info = json.loads(body)
    assert status == 200 and info["max_total_num_tokens"] == 212000
    assert info["mem_fraction_static"] == 0.93 and info["tp_size"] == 8
    assert json.loads(_get(url + "/get_server_info")[1])["max_total_num_tokens"] == 212000
    assert json.loads(_get(url + "/model_info")[1])["model_path"] == info["model_path"]
    assert _get(url + "/health")[0] == 200
    last = [r for r in parse_log(run.server_log) if r["kind"] == "decode"][-1]
    metrics = _get(url + "/metrics")[1]
    assert _metric(metrics, "gen_throughput") == pytest.approx(last["gen_throughput"], abs=0.01)
    assert _metric(metrics, "num_running_reqs") == last["running_req"]
    assert _metric(metrics, "num_queue_reqs") == last["queue_req"]
    assert _metric(metrics, "token_usage") == pytest.approx(last["token_usage"])
    run.advance_to(310)
    assert _refused(url)  # crashed
    run.advance_to(377)
    assert _get(url + "/health")[0] == 503  # restarting, same port
    run.advance_to(400)
    assert _get(url + "/health")[0] == 200
    assert json.loads(_get(url + "/server_info")[1])["max_total_num_tokens"] == 159277
    assert f":{url.rsplit(':', 1)[1]} (Press CTRL+C" in run.server_log.read_text()


def test_legacy_family_serves_only_the_old_names(make_run):
    run = make_run("healthy", log_format="0.4.3")
    run.start(background=False)
    run.advance_to(30)
    assert _get(run.url + "/server_info")[0] == 404
    assert _get(run.url + "/get_server_info")[0] == 200
    assert _get(run.url + "/get_model_info")[0] == 200


def test_nvml_memory_follows_the_server(make_run):
    run = make_run("oom-crash-restart", gpus=4)
    nv = run.nvml
    nv.nvmlInit()
    handle = nv.nvmlDeviceGetHandleByIndex(3)
    assert nv.nvmlDeviceGetCount() == 4

    def free_gib() -> float:
        return nv.nvmlDeviceGetMemoryInfo(handle).free / GIB

    run.advance_to(100)
    assert 0.5 < free_gib() < 1.2  # 0.82 GB avail after graph capture, as the log says
    assert nv.nvmlDeviceGetUtilizationRates(handle).gpu > 80
    assert nv.nvmlDeviceGetComputeRunningProcesses(handle)
    run.advance_to(320)
    assert free_gib() > 90 and not nv.nvmlDeviceGetComputeRunningProcesses(handle)
    run.advance_to(400)
    assert 5.0 < free_gib() < 6.0


def test_background_thread_runs_in_accelerated_time(make_run):
    run = make_run("healthy", speed=400.0, duration=60)
    run.start()
    assert run.wait(timeout=10)  # 60 simulated seconds at 400x
    assert "ready to roll" in run.server_log.read_text()
    assert run.sim_now() >= 60
    assert run.config().url == run.url and run.config().log == run.server_log
    run.stop()
    assert run.url == ""
