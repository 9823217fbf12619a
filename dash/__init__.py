"""kdash: a terminal dashboard for long LLM inference runs."""

__version__ = "0.1.0"
