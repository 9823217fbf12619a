"""What the simulated server answers over HTTP, from the simulation's state (pure).

The current family serves `/server_info`, `/model_info`, their deprecated `/get_*` names,
`/metrics`, `/health` and `/ready`; the 0.4.x families only the `/get_*` names, `/metrics` and
`/health` (404 elsewhere), as those versions did. `/health` and `/ready` answer 503 until the
ready banner. Gauges change only when a decode line is written (SGLang updates them at
its decode and prefill reports). With an API key (SGLang's `--api-key`), every path but
`/health*`, `/ready*` and `/metrics*` answers 401 `{"error": "Unauthorized"}` unless the request
says `Authorization: Bearer KEY`, as SGLang 0.5.x does (unknown paths too: its check comes
before the routing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dash.sim.engine import CONTEXT_LEN, MAX_RUNNING, MODEL, Simulation
from dash.sim.scenarios import Load

_CURRENT_ONLY = ("/server_info", "/model_info", "/ready")
_OPEN_PREFIXES = ("/health", "/ready", "/metrics")
"""What SGLang leaves open to every caller when it has an API key (probes, Prometheus)."""
_LABELS = f'engine_type="unified",model_name="{MODEL}",moe_ep_rank="0",pp_rank="0",tp_rank="0"'


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer."""

    status: int
    body: bytes
    content_type: str = "application/json"


def _json(status: int, doc: object) -> Response:
    return Response(status, json.dumps(doc).encode())


def server_info(sim: Simulation, t: float) -> dict[str, object]:
    """The server args, scheduler info at top level and internal states per DP rank."""
    life = sim.life_at(t)
    tokens = life.max_total_num_tokens if life else 0
    load = sim.counters.reported
    return {
        "model_path": MODEL, "served_model_name": MODEL, "tp_size": sim.tp, "dp_size": sim.dp,
        "pp_size": 1, "mem_fraction_static": life.mem_fraction if life else None,
        "kv_cache_dtype": life.kv_dtype if life else None, "context_length": CONTEXT_LEN,
        "max_running_requests": MAX_RUNNING, "chunked_prefill_size": 8192,
        "decode_log_interval": 40, "enable_metrics": True, "port": sim.port,
        "status": "ready" if sim.ready(t) else "starting",
        "max_total_num_tokens": tokens, "max_req_input_len": CONTEXT_LEN - 1,
        "enable_hierarchical_cache": bool(life and life.hicache_gb),
        "hicache_size": life.hicache_gb if life else 0,
        "version": sim.fmt.family,
        "internal_states": [{
            "last_gen_throughput": load.gen if load else 0.0,
            "memory_usage": {"weight": 58.2, "kvcache": 24.6, "token_capacity": tokens,
                             "graph": 3.2},
            "effective_max_running_requests_per_dp": MAX_RUNNING,
        }],
    }


def model_info() -> dict[str, object]:
    return {"model_path": MODEL, "tokenizer_path": MODEL, "is_generation": True,
            "preferred_sampling_params": None, "weight_version": "default",
            "has_image_understanding": False, "has_audio_understanding": False,
            "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]}


def _rank_labels(dp_rank: int, tp_rank: int) -> str:
    """A DP rank's scheduler's labels (sorted), as SGLang's multiprocess metrics write them."""
    return (f'dp_rank="{dp_rank}",engine_type="unified",model_name="{MODEL}",moe_ep_rank="0",'
            f'pp_rank="0",tp_rank="{tp_rank}"')


def _rank_gauges(sim: Simulation, load: Load | None, tokens: int) -> dict[str, float]:
    return {
        "num_running_reqs": load.running if load else 0,
        "num_queue_reqs": load.queue if load else 0,
        "num_used_tokens": int(load.usage * tokens) if load else 0,
        "token_usage": round(load.usage, 2) if load else 0.0,
        "gen_throughput": load.gen if load else 0.0,
        "cache_hit_rate": 0.0,
        "max_total_num_tokens": tokens,
        "new_token_ratio": sim.counters.new_token_ratio,
    }


def metrics_text(sim: Simulation, t: float) -> str:
    """Prometheus text with `sglang:` names (labels sorted, as multiprocess mode writes them).
    With DP ranks each rank's scheduler publishes its own gauges, with its `dp_rank`."""
    life = sim.life_at(t)
    c = sim.counters
    tokens = life.max_total_num_tokens if life else 0
    if sim.dp == 1:
        per_rank = [(_LABELS, _rank_gauges(sim, c.reported, tokens))]
    else:
        loads: list[Load | None] = list(c.ranks) if c.reported and c.ranks else [None] * sim.dp
        per_rank = [(_rank_labels(d, sim.dp_head(d)), _rank_gauges(sim, load, tokens))
                    for d, load in enumerate(loads)]
    counters = {
        "prompt_tokens": c.prompt_tokens, "generation_tokens": c.generation_tokens,
        "num_requests": c.requests, "num_retracted_requests": c.retractions,
    }
    out: list[str] = []
    for name in per_rank[0][1]:
        out += [f"# HELP sglang:{name} {name.replace('_', ' ')}.", f"# TYPE sglang:{name} gauge"]
        out += [f"sglang:{name}{{{labels}}} {float(gauges[name])}" for labels, gauges in per_rank]
    for name, value in counters.items():
        out += [f"# HELP sglang:{name}_total {name.replace('_', ' ')}.",
                f"# TYPE sglang:{name}_total counter",
                f"sglang:{name}_total{{{_LABELS}}} {float(value)}"]
    return "\n".join(out) + "\n"


def authorized(path: str, authorization: str | None, api_key: str | None) -> bool:
    """Whether a request to `path` with this `Authorization` header gets past SGLang's key."""
    if not api_key or path.split("?", 1)[0].startswith(_OPEN_PREFIXES):
        return True
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and token == api_key


def answer(sim: Simulation, t: float, path: str, authorization: str | None = None,
           api_key: str | None = None) -> Response:
    """The response to `GET path` at simulated time t (the caller checks the server is up)."""
    if not authorized(path, authorization, api_key):
        return _json(401, {"error": "Unauthorized"})
    path = path.split("?", 1)[0]
    if sim.fmt.legacy and path in _CURRENT_ONLY:
        return _json(404, {"detail": "Not Found"})
    if path in ("/server_info", "/get_server_info"):
        return _json(200, server_info(sim, t))
    if path in ("/model_info", "/get_model_info"):
        return _json(200, model_info())
    if path == "/metrics":
        return Response(200, metrics_text(sim, t).encode(), "text/plain; version=0.0.4")
    if path in ("/health", "/health_generate", "/ready"):
        return Response(200 if sim.ready(t) else 503, b"", "text/plain")
    return _json(404, {"detail": "Not Found"})
