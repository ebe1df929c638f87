"""Serve trained models: `attnclf serve ckpt=<run>` or `attnclf serve 'ckpt=[<dot run>,<additive run>]'`.

The settings are checked and the port taken before any model is loaded; the models are loaded, named, and
served by uvicorn until Ctrl-C or SIGTERM, which let the requests in flight finish and end with status 0."""

from __future__ import annotations

import errno
import socket

import uvicorn
from omegaconf import DictConfig

from attnclf.errors import AttnclfError
from attnclf.settings.serve import ServeConfig, serve_settings
from attnclf.utils.checks import repeated
from attnclf.utils.threads import torch_threads


def serve(cfg: DictConfig) -> None:
    # every value checked, before the port is taken or a model loaded
    s = serve_settings(cfg)
    sock = listening_socket(s.host, s.port)
    try:
        with torch_threads(s.num_threads):
            from attnclf.serving.app import create_app

            app = create_app(load_models(s), s)
            run_server(app, sock)
    finally:
        sock.close()


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (a port in use is one line), handed to the server as it is. It
    listens from here on: a client that connects while the models load waits, and is answered once they
    are."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP; without it a keep-alive
    # client waits 40 ms for each answer (Nagle's algorithm against delayed ACKs)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise AttnclfError(f"port={port} is in use on {host}; give another (port=0: any free one)") from None
        raise AttnclfError(f"host={host!r} port={port}: cannot listen there ({e.strerror or e})") from None
    sock.listen(2048)
    return sock


def load_models(s: ServeConfig) -> list:
    """The served models, loaded and named: `names`, else each one's attention (its run folder's name where
    two share an attention)."""
    from attnclf.inference.trained import TrainedClassifier
    from attnclf.serving.app import Model
    from attnclf.training.checkpoint import best_checkpoint

    ckpts = [best_checkpoint(c).resolve() for c in s.ckpt]
    twice = repeated(str(c) for c in ckpts)
    if twice:
        raise AttnclfError(f"ckpt: {twice[0]} is given twice; serve each model once")
    clfs = [TrainedClassifier.from_checkpoint(c, s.device) for c in ckpts]
    attentions = [c.module.hparams.attention for c in clfs]
    names = s.names or [a if attentions.count(a) == 1 else c.run.name for a, c in zip(attentions, clfs, strict=True)]
    if len(set(names)) < len(names):
        raise AttnclfError(f"the models' names clash ({', '.join(names)}); name them: 'names=[a,b,...]'")
    int8 = s.quantize == "int8"
    return [
        Model(
            name,
            clf,
            ckpt,
            f"{clf.run.name}: {attention} attention, {rnn_of(clf)}{tested(clf)}",
            clf.int8() if int8 else clf,
        )
        for name, clf, ckpt, attention in zip(names, clfs, ckpts, attentions, strict=True)
    ]


def tested(clf) -> str:
    """ ", test accuracy 0.xxx" from the run's metrics.json, where it holds one (a run tested at its end)."""
    from attnclf.utils.jsonfile import read_json

    metrics = clf.run / "metrics.json"
    acc = read_json(metrics).get("test/acc") if metrics.is_file() else None
    return "" if acc is None else f", test accuracy {acc:.3f}"


def rnn_of(clf) -> str:
    """The encoder a served model reads with, as its page names it."""
    return "BiLSTM" if clf.module.config.model.rnn == "lstm" else "BiGRU"


def run_server(app, sock: socket.socket) -> None:
    """Serve `app` on `sock` until Ctrl-C or SIGTERM; print the address once it answers."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    names = ", ".join(m for m in app.state.model_names)
    ready = f"serving {names} at http://{shown}:{port}/ (the page; the API at /docs); Ctrl-C stops it"
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        http="h11",
        loop="asyncio",
        timeout_graceful_shutdown=30,
        h11_max_incomplete_event_size=1 << 20,
    )
    Server(config, ready).run(sockets=[sock])


class Server(uvicorn.Server):
    """uvicorn's server, saying where it answers once it does, and ending a stop by Ctrl-C or SIGTERM with
    status 0 (uvicorn raises the signal again after its graceful shutdown, which would end the process by it)."""

    def __init__(self, config: uvicorn.Config, ready: str):
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.ready, flush=True)

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()


# what the Hydra app `attnclf serve` calls with its composed config (attnclf/commands/__init__.py)
command = serve
