"""`attnclf serve`'s settings (conf/serve.yaml), checked before any model is loaded."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from attnclf.errors import AttnclfError
from attnclf.settings.run import DEFAULT_SEED, check_device, check_quantize, checkpoints_given
from attnclf.settings.typed import typed
from attnclf.utils.checks import positive_int, positive_number, repeated

# the environment variable read where api_key= is not given
API_KEY_VARIABLE = "ATTNCLF_API_KEY"
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass
class ServeConfig:
    """The server's settings: what it serves, where, and the limits every request is held to."""

    # a checkpoint or run folder, or a list of them (each served side by side)
    ckpt: Any = None
    # each model's name, in ckpt's order (None: its attention, or its run folder's name where two share one)
    names: Any = None
    # this machine only; any other host requires an API key
    host: str = "127.0.0.1"
    # 0: any free port (the address printed says which)
    port: int = 8000
    # required by every endpoint but /health; None: $ATTNCLF_API_KEY, else none (127.0.0.1 only)
    api_key: str | None = None
    # cpu or cuda
    device: str = "cpu"
    # torch CPU threads; None: PyTorch's default
    num_threads: int | None = None
    # /predict's model: none (float), or int8 (the encoder's recurrent layers and the output layer; CPU);
    # /explain and the pages read the float model (int8 layers pass no gradient back)
    quantize: str = "none"
    # texts a /predict request may hold
    max_texts: int = 64
    # characters a text may hold (413 past it)
    max_text_chars: int = 100_000
    # bytes a request body may hold (413 past it)
    max_body_bytes: int = 2_000_000
    # seconds a request's body may take to arrive whole (408 and the connection closed past it)
    body_timeout: float = 30.0
    # padded tokens a dynamic batch holds at most
    batch_tokens: int = 16_384
    # texts waiting for the model; a request past it is refused (503) until it drains
    max_queue: int = 4096
    # test rows /browse samples (seeded) from the first model's run
    browse_rows: int = 500
    # the seed of /browse's sample
    seed: int = DEFAULT_SEED
    # seconds a /browse waits for its rows (prepared from the start, in the background) before it answers with
    # a page that says how far they have got and refreshes itself
    browse_wait: float = 2.0
    # /explain's and the page's search for what flips a decision: at most this many words deleted
    flip_within: int = 50

    def normalize(self) -> None:
        """ckpt and names as lists; the API key given, else $ATTNCLF_API_KEY's."""
        self.ckpt = checkpoints_given(self.ckpt, "serve")
        if self.names is not None:
            self.names = [self.names] if isinstance(self.names, str) else [str(n) for n in self.names]
        self.api_key = self.api_key or os.environ.get(API_KEY_VARIABLE) or None

    def check(self) -> None:
        self.check_names()
        for key in (
            "max_texts",
            "max_text_chars",
            "max_body_bytes",
            "batch_tokens",
            "max_queue",
            "browse_rows",
            "flip_within",
        ):
            positive_int(key, getattr(self, key))
        positive_int("num_threads", self.num_threads, "PyTorch's default")
        positive_number("body_timeout", self.body_timeout)
        if not self.browse_wait >= 0:
            raise AttnclfError(f"browse_wait={self.browse_wait} must be a number of seconds >= 0")
        if not 0 <= self.port <= 65535:
            raise AttnclfError(f"port={self.port} must be in 0..65535 (0: any free port)")
        check_device(self.device)
        check_quantize(self.quantize, self.device)
        if not is_loopback(self.host) and not self.api_key:
            raise AttnclfError(
                f"host={self.host!r} serves beyond this machine: give an API key (api_key=... or "
                f"{API_KEY_VARIABLE}=...), or serve on host=127.0.0.1"
            )

    def check_names(self) -> None:
        if self.names is None:
            return
        names = self.names
        if len(names) != len(self.ckpt):
            raise AttnclfError(f"names={names}: {len(names)} names for {len(self.ckpt)} checkpoints; give one each")
        for name in names:
            if not NAME.fullmatch(name):
                raise AttnclfError(f"names: {name!r} is not a name; allowed: letters, digits, '_', '.', '-'")
        twice = repeated(names)
        if twice:
            raise AttnclfError(f"names: {', '.join(map(repr, twice))} given twice; each model needs its own name")


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine alone (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_settings(cfg: DictConfig) -> ServeConfig:
    values = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k not in ("paths", "hydra")}
    config = typed(ServeConfig, values, "")
    config.normalize()
    config.check()
    return config
