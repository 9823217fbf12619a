"""HttpPoller against real HTTP servers on 127.0.0.1: recorded SGLang/vLLM answers and bad servers."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
from fixtures.http.fakeserver import FakeServer, Route, free_port, recorded

from dash.core.state.http_state import HttpTracker
from dash.sources.http import HttpPoller, post_webhook

NOW = 1_750_000_000.0


async def _poll(url: str, *times: float, **kw: float) -> list:
    poller = HttpPoller(url, **kw)
    try:
        return [await poller.poll(NOW + t) for t in times]
    finally:
        await poller.aclose()


async def test_new_sglang_uses_new_endpoints_and_fetches_info_rarely() -> None:
    with FakeServer(recorded("sglang-0.5.23")) as srv:
        first, second, later = await _poll(srv.url, 0, 2, 61)
    assert first.state == "up" and first.ready is True and first.metrics_enabled
    assert first.endpoints == {"server_info": "/server_info", "model_info": "/model_info"}
    assert first.metrics["running_req"] == 212 and first.metrics["token_usage"] == 0.7
    assert second.server_info is None and second.model_info is None  # slow-changing: not re-read
    assert later.server_info is not None
    assert srv.hits.count("/server_info") == 2
    assert not [h for h in srv.hits if "health" in h or h.startswith("/get_")]
    tracker = HttpTracker(srv.url)
    tracker.apply(first, NOW)
    facts = tracker.snapshot(NOW).facts
    assert facts["model"] == "llama-70b" and facts["tp_size"] == 8
    assert facts["max_total_num_tokens"] == 2614272 and facts["kv_cache_dtype"] == "fp8_e4m3"
    assert facts["hicache_size"] == 200 and facts["version"] == "0.5.23"
    assert facts["mem_fraction_static"] == 0.83


async def test_old_sglang_falls_back_and_remembers_the_working_path() -> None:
    with FakeServer(recorded("sglang-0.4.10")) as srv:
        samples = await _poll(srv.url, 0, 2, 4, 70)
    assert all(s.state == "up" for s in samples)
    assert samples[0].endpoints["server_info"] == "/get_server_info"
    assert srv.hits.count("/server_info") == 1  # tried once, then remembered
    assert srv.hits.count("/get_server_info") == 2  # at connect and at the 60 s refresh
    assert srv.hits.count("/ready") == 1  # absent before 0.5.20: not asked every poll
    assert "/health" not in srv.hits
    tracker = HttpTracker(srv.url)
    tracker.apply(samples[0], NOW)
    facts = tracker.snapshot(NOW).facts
    assert facts["tp_size"] == 4 and facts["version"] == "0.4.10.post2"
    assert facts["max_total_num_tokens"] == 1211008 and facts["model"] == "qwen72b"


async def test_server_without_metrics_stays_up_and_metrics_are_rechecked_rarely() -> None:
    with FakeServer(recorded("sglang-0.3.6")) as srv:
        samples = await _poll(srv.url, 0, 2, 4, 6, 65)
    assert all(s.state == "up" for s in samples)
    assert all(s.metrics_enabled is False and s.metrics is None for s in samples)
    assert srv.hits.count("/metrics") == 2  # at connect, then after the recheck interval
    assert srv.hits.count("/get_model_info") >= 5  # the cheap liveness probe, every poll
    assert srv.hits.count("/get_server_info") == 2
    assert samples[0].server_info and samples[0].server_info["version"] == "0.3.6.post3"


async def test_new_sglang_without_metrics_lives_on_ready() -> None:
    routes = recorded("sglang-0.5.23")
    del routes["/metrics"]
    with FakeServer(routes) as srv:
        first, second = await _poll(srv.url, 0, 2)
    assert first.state == second.state == "up" and second.ready is True
    assert second.latency_s is not None


@pytest.mark.parametrize(("version", "engine"), [("vllm-0.7.3", "vllm"), ("vllm-0.33", "vllm")])
async def test_vllm_old_and_new_metric_names(version: str, engine: str) -> None:
    with FakeServer(recorded(version)) as srv:
        (sample,) = await _poll(srv.url, 0)
    assert sample.state == "up" and sample.engine == engine
    assert sample.metrics["token_usage"] == 0.375 and sample.metrics["running_req"] == 24
    assert sample.server_info == {"version": version.split("-")[1].replace("0.33", "0.33.0")}


async def test_ready_503_is_degraded_not_down() -> None:
    routes = recorded("sglang-0.5.23")
    routes["/ready"] = Route(503, b"")
    with FakeServer(routes) as srv:
        (sample,) = await _poll(srv.url, 0)
    assert sample.state == "degraded" and sample.error == "not ready" and sample.ready is False


async def test_connection_refused() -> None:
    (sample,) = await _poll(f"http://127.0.0.1:{free_port()}", 0)
    assert sample.state == "down" and sample.error == "connection refused"


async def test_bad_url_is_a_value() -> None:
    (sample,) = await _poll("not-a-url", 0)
    assert sample.state == "down" and sample.error in ("bad url", "connection error")


async def test_an_unparsable_url_is_a_value_not_an_exception() -> None:
    (sample,) = await _poll("http://[::1", 0)  # httpx.InvalidURL is not an httpx.HTTPError
    assert sample.state == "down" and sample.error == "bad url"


async def test_hung_server_times_out_near_the_read_timeout() -> None:
    hang = 10.0
    routes = {p: Route(hang_s=hang, body=r.body) for p, r in recorded("sglang-0.5.23").items()}
    with FakeServer(routes) as srv:
        start = time.monotonic()
        (sample,) = await _poll(srv.url, 0, connect_timeout=0.3, read_timeout=0.5)
        took = time.monotonic() - start
    assert sample.state == "down" and sample.error == "timeout"
    assert took < hang / 5  # the client gave up; it did not wait for the server


async def test_closing_during_a_hung_poll_does_not_wait_for_it() -> None:
    # A quit while the server hangs: the poll's thread runs on to its deadline, the quit does not.
    routes = {p: Route(hang_s=10.0, body=r.body) for p, r in recorded("sglang-0.5.23").items()}
    with FakeServer(routes) as srv:
        poller = HttpPoller(srv.url, connect_timeout=1.0, read_timeout=3.0)
        task = asyncio.ensure_future(poller.poll(NOW))
        await asyncio.sleep(0.2)
        start = time.monotonic()
        await poller.aclose(timeout=0.3)
        assert time.monotonic() - start < 1.5
        with pytest.raises(asyncio.CancelledError):
            await task
        # Once the cycle's deadline has passed, the connection is closed.
        def closed_within(seconds: float) -> bool:
            deadline = time.monotonic() + seconds
            while poller._conn is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            return poller._conn is None

        assert await asyncio.to_thread(closed_within, 8.0)


async def test_trickled_body_is_bounded_by_the_poll_deadline() -> None:
    body = (recorded("sglang-0.5.23")["/metrics"].body)[:3000]  # 3000 bytes x 10 ms = 30 s
    with FakeServer({"/metrics": Route(body=body, trickle_s=0.01, content_type="text/plain")}) as srv:
        start = time.monotonic()
        (sample,) = await _poll(srv.url, 0, connect_timeout=0.3, read_timeout=0.5)
        took = time.monotonic() - start
    assert sample.error == "timeout"
    assert took < 3.0  # every single read was quick; only the overall deadline can stop this


async def test_http_500_everywhere_is_degraded() -> None:
    routes = {p: Route(500, b"Internal Server Error") for p in recorded("sglang-0.5.23")}
    with FakeServer(routes) as srv:
        (sample,) = await _poll(srv.url, 0)
    assert sample.state == "degraded" and sample.error == "HTTP 500"
    assert "HTTP 500 /metrics" in sample.problems


@pytest.mark.parametrize("path", ["/metrics", "/server_info", "/model_info"])
async def test_garbage_body_is_bad_body(path: str) -> None:
    routes = recorded("sglang-0.5.23")
    routes[path] = Route(body=b"\x00\xff<html>{{{ not what you think \xfe", content_type="text/html")
    with FakeServer(routes) as srv:
        (sample,) = await _poll(srv.url, 0)
    assert sample.state == "degraded" and sample.error == "bad body"
    assert f"bad body {path}" in sample.problems


@pytest.mark.parametrize("send_length", [True, False])
async def test_ten_megabyte_body_is_cut_off(send_length: bool) -> None:
    routes = recorded("sglang-0.5.23")
    line = b'sglang:num_running_reqs{tp_rank="0"} 1.0\n'
    routes["/metrics"] = Route(body=line * (10 * 1024 * 1024 // len(line)), send_length=send_length,
                               content_type="text/plain")
    with FakeServer(routes) as srv:
        first, second = await _poll(srv.url, 0, 2)
    assert first.error == second.error == "body too large" and first.metrics is None
    assert first.state == "degraded"


async def test_polls_never_overlap() -> None:
    routes = recorded("sglang-0.5.23")
    routes["/metrics"].hang_s = 0.3
    with FakeServer(routes) as srv:
        poller = HttpPoller(srv.url)
        try:
            a, b = await asyncio.gather(poller.poll(NOW), poller.poll(NOW))
        finally:
            await poller.aclose()
    assert a is b and srv.hits.count("/metrics") == 1


async def test_restart_on_the_same_port_is_seen_and_info_read_again() -> None:
    routes = recorded("sglang-0.5.23")
    with FakeServer(routes) as srv:
        poller = HttpPoller(srv.url, connect_timeout=0.3, read_timeout=0.5)
        first = await poller.poll(NOW)
        second = await poller.poll(NOW + 2)
    try:
        down = await poller.poll(NOW + 4)
        with FakeServer(routes, port=srv.port):
            back = await poller.poll(NOW + 6)
    finally:
        await poller.aclose()
    assert first.server_info is not None and second.server_info is None
    assert down.state == "down" and down.error == "connection refused"
    assert back.state == "up" and back.server_info is not None  # re-read at reconnect, not at 60 s


async def test_webhook_delivery() -> None:
    routes = {"/hook": Route(200, b"ok"), "/bad": Route(500, b"no such channel")}
    with FakeServer(routes) as srv:
        ok = await post_webhook(srv.url + "/hook", {"text": "kdash: server down"})
        bad = await post_webhook(srv.url + "/bad", {"text": "x"})
    refused = await post_webhook(f"http://127.0.0.1:{free_port()}/hook", {"text": "x"})
    assert ok is None and bad == "HTTP 500: no such channel"
    assert refused == "connection refused"
    assert any(h.startswith("POST /hook") and '"text"' in h for h in srv.hits)


def _http_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name.startswith("kdash-http")]


async def test_every_poll_runs_in_one_thread_that_closing_joins() -> None:
    """Polls every few seconds for as long as the dashboard runs: one thread for all of them,
    not one started for each, and none left once the poller is closed."""
    import threading

    seen: set[int] = set()
    with FakeServer(recorded("sglang-0.5.23")) as srv:
        poller = HttpPoller(srv.url)
        real = poller.poll_blocking

        def noted(now: float):  # type: ignore[no-untyped-def]
            seen.add(threading.get_ident())
            return real(now)

        poller.poll_blocking = noted  # type: ignore[method-assign]
        try:
            samples = [await poller.poll(NOW + 2 * i) for i in range(6)]
            assert _http_threads() == ["kdash-http"]
            thread = poller._worker.thread
        finally:
            await poller.aclose()
    assert all(s.state == "up" for s in samples)
    assert len(seen) == 1 and thread is not None and thread.ident in seen
    assert not thread.is_alive() and _http_threads() == []


async def test_an_info_route_that_answered_an_error_is_asked_again_soon() -> None:
    """A 500 from /server_info is asked again within 10 s, not at the next minute: one failure
    must not stand as the route's answer (the state degraded) for the whole interval."""
    routes = recorded("sglang-0.5.23")
    good = routes["/server_info"]
    routes["/server_info"] = Route(status=500, body=b"Internal Server Error")
    with FakeServer(routes) as srv:
        poller = HttpPoller(srv.url)
        try:
            first = await poller.poll(NOW)
            srv.routes["/server_info"] = good
            later = [await poller.poll(NOW + t) for t in (2, 4, 12)]
        finally:
            await poller.aclose()
    assert first.server_info is None and ("/server_info", 500) in first.answers
    assert [s.server_info is not None for s in later] == [False, False, True]


async def test_polls_keep_one_connection_alive() -> None:
    with FakeServer(recorded("sglang-0.5.23")) as srv:
        samples = await _poll(srv.url, 0, 2, 4, 6, 8)
    assert all(s.state == "up" for s in samples)
    assert len(srv.hits) >= 11 and srv.connections == 1


async def test_a_connection_the_server_closed_is_opened_again_without_an_error() -> None:
    with FakeServer(recorded("sglang-0.5.23")) as srv:
        poller = HttpPoller(srv.url)
        try:
            first = await poller.poll(NOW)
            srv.drop_connections()  # its keep-alive timeout passed between two polls
            await asyncio.sleep(0.1)
            second = await poller.poll(NOW + 2)
        finally:
            await poller.aclose()
    assert first.state == second.state == "up"
    assert second.error is None and second.problems == ()
    assert srv.connections == 2


async def test_redirects_are_followed_and_a_base_path_is_kept() -> None:
    routes = {f"/sglang{path}": route for path, route in recorded("sglang-0.5.23").items()}
    routes["/sglang/metrics"] = Route(307, headers=(("Location", "/sglang/v2/metrics"),))
    routes["/sglang/v2/metrics"] = recorded("sglang-0.5.23")["/metrics"]
    with FakeServer(routes) as srv:
        (sample,) = await _poll(srv.url + "/sglang/", 0)
    assert sample.state == "up" and sample.metrics["running_req"] == 212
    assert sample.endpoints["server_info"] == "/server_info"
    assert "/sglang/v2/metrics" in srv.hits and not [h for h in srv.hits
                                                      if not h.startswith("/sglang/")]


async def test_a_redirect_loop_is_a_protocol_error() -> None:
    routes = recorded("sglang-0.5.23")
    routes["/metrics"] = Route(302, headers=(("Location", "/metrics"),))
    with FakeServer(routes) as srv:
        (sample,) = await _poll(srv.url, 0)
    assert sample.error == "protocol error" and "protocol error /metrics" in sample.problems


async def test_a_server_that_closes_without_answering_is_a_protocol_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def close_each() -> None:
            for _ in range(2):
                conn, _ = listener.accept()
                conn.recv(4096)
                conn.close()

        closer = threading.Thread(target=close_each, daemon=True)
        closer.start()
        (sample,) = await _poll(f"http://127.0.0.1:{port}", 0, connect_timeout=0.5,
                                read_timeout=0.5)
    assert sample.state == "down" and sample.error == "protocol error"


async def test_a_redirect_with_a_body_leaves_the_connection_usable() -> None:
    routes = recorded("sglang-0.5.23")
    routes["/metrics"] = Route(302, body=b'{"detail":"moved"}' * 20,
                               headers=(("Location", "/v2/metrics"),))
    routes["/v2/metrics"] = recorded("sglang-0.5.23")["/metrics"]
    with FakeServer(routes) as srv:
        samples = await _poll(srv.url, 0, 2, 4)
    assert all(s.state == "up" and s.metrics["running_req"] == 212 for s in samples)
    assert all(s.problems == () for s in samples)
    assert srv.connections == 1


async def test_a_redirect_to_another_server_is_followed_and_not_kept() -> None:
    with FakeServer(recorded("sglang-0.5.23")) as other:
        routes = recorded("sglang-0.5.23")
        routes["/metrics"] = Route(307, headers=(("Location", f"{other.url}/metrics"),))
        with FakeServer(routes) as srv:
            samples = await _poll(srv.url, 0, 2)
    assert all(s.state == "up" and s.metrics["running_req"] == 212 for s in samples)
    assert other.hits == ["/metrics", "/metrics"]
    # the URL's own routes went to its own server every time, never to the other one
    assert srv.hits.count("/ready") == 2 and "/ready" not in other.hits


async def test_error_answers_keep_the_connection_and_only_a_key_given_is_sent() -> None:
    with FakeServer(recorded("sglang-0.4.10")) as srv:  # /ready and /server_info answer 404
        samples = await _poll(srv.url, 0, 2, 4)
    assert all(s.state == "up" for s in samples) and srv.connections == 1
    assert not any(s.key_sent for s in samples) and set(srv.auth) == {None}


async def test_a_user_and_password_in_the_url_are_sent_as_basic_auth() -> None:
    # A server behind a proxy that asks for them: `--url http://user:p%40ss@host:port`.
    import base64
    with FakeServer(recorded("sglang-0.5.23")) as srv:
        url = srv.url.replace("http://", "http://kd:p%40ss@")
        samples = await _poll(url, 0, 2)
    assert all(s.state == "up" for s in samples)
    assert set(srv.auth) == {"Basic " + base64.b64encode(b"kd:p@ss").decode()}
