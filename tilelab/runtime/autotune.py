"""Autotuning and heuristics: pick meta-parameters per input shape, Triton-style.

``@autotune(configs, key)`` times every ``Config`` the first time a new value of the
``key`` arguments is seen, remembers the fastest, and launches with it from then on.
``@heuristics({"EVEN": lambda meta: meta["n"] % meta["BLOCK"] == 0})`` computes
meta-parameters from the other arguments at each launch::

    @tilelab.autotune(configs=[tilelab.Config({"BLOCK": 128}), tilelab.Config({"BLOCK": 1024})], key=["n"])
    @tilelab.jit
    def add(x, y, out, n, BLOCK: tl.constexpr): ...

    add[lambda meta: (tilelab.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    add.best_config   # Config(BLOCK: 1024, num_warps: 4, num_stages: 3)
"""

from __future__ import annotations

from tilelab.compiler.options import NUM_STAGES, NUM_WARPS

from .arrays import array_info
from .bench import do_bench
from .errors import LaunchError


class Config:
    """One candidate: constexpr values (``kwargs``), ``num_warps``, ``num_stages``, ``maxnreg`` (``None``: no cap),
    an optional ``pre_hook``."""

    def __init__(self, kwargs, num_warps=NUM_WARPS, num_stages=NUM_STAGES, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """The constexprs plus the launch options, as ``kernel[grid](..., **kw)`` takes them."""
        extra = {} if self.maxnreg is None else {"maxnreg": self.maxnreg}
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages, **extra}

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        parts += [] if self.maxnreg is None else [f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self})"


class KernelWrapper:
    """Shared surface of wrappers around a ``JITFunction`` (``kernel[grid]``, ``.fn``, names)."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = fn.arg_names
        self._tilelab_fn = fn._tilelab_fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            return self.run(*args, grid=grid, **kwargs)

        return launcher

    def named_args(self, args: tuple, kwargs: dict) -> dict:
        return {**dict(zip(self.arg_names, args)), **kwargs}


class Heuristics(KernelWrapper):
    """Computes meta-parameters from the launch's arguments (``values``: name -> function of meta)."""

    def __init__(self, fn, values: dict):
        super().__init__(fn)
        self.values = values

    def run(self, *args, **kwargs):
        meta = self.named_args(args, kwargs)
        for name, rule in self.values.items():
            kwargs[name] = meta[name] = rule(meta)
        return self.fn.run(*args, **kwargs)


def heuristics(values: dict):
    """Decorator: ``@heuristics({"BLOCK": lambda meta: next_power_of_2(meta["n"])})``."""
    return lambda fn: Heuristics(fn, values)


class Autotuner(KernelWrapper):
    """Times ``configs`` once per distinct ``key`` and launches with the fastest."""

    def __init__(self, fn, configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, **opts):
        super().__init__(fn)
        self.configs = list(configs) or [Config({})]
        self.key = list(key)
        self.prune = prune_configs_by or {}
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.warmup = opts.get("warmup", 25)
        self.rep = opts.get("rep", 100)
        self.do_bench = opts.get("do_bench")
        self.cache: dict[tuple, Config] = {}
        self.best_config: Config | None = None
        self.timings: dict[Config, float] = {}
        self.failures: dict[Config, str] = {}  # configs that could not compile or run, and why

    def tuning_key(self, named: dict) -> tuple:
        """The ``key`` arguments' values (arrays count by dtype, as in Triton)."""
        out = []
        for name in self.key:
            value = named.get(name)
            info = array_info(value)
            out.append(str(info.elem) if info is not None else value)
        return tuple(out)

    def run(self, *args, grid=None, **kwargs):
        named = self.named_args(args, kwargs)
        clash = sorted({k for c in self.configs for k in c.kwargs} & set(kwargs))
        if clash:
            raise LaunchError(f"{self.__name__}(): conflicting meta-parameters {clash}: they are auto-tuned")
        key = self.tuning_key(named)
        if key not in self.cache:
            unknown = [n for n in self.reset_to_zero + self.restore_value if n not in named]
            if unknown:
                raise LaunchError(f"{self.__name__}(): reset_to_zero / restore_value name {unknown}, not its arguments")
            self.cache[key] = self.tune(args, kwargs, grid, named)
            for name in self.reset_to_zero:  # the last timed run's writes are not this launch's (as in Triton)
                named[name][...] = 0
        config = self.best_config = self.cache[key]
        if config.pre_hook:
            config.pre_hook(dict(named, **config.all_kwargs()))
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    def pruned_configs(self, named: dict, kwargs: dict) -> list[Config]:
        """Apply ``prune_configs_by``: ``early_config_prune``, then ``perf_model`` + ``top_k``."""
        configs = self.configs
        early = self.prune.get("early_config_prune")
        if early:
            configs = list(early(configs, named, **kwargs))
        model, top_k = self.prune.get("perf_model"), self.prune.get("top_k")
        if model and top_k:
            k = int(top_k * len(configs)) if isinstance(top_k, float) and top_k <= 1 else int(top_k)
            configs = sorted(configs, key=lambda c: model(**named, **kwargs, **c.all_kwargs()))[:k]
        return configs

    def tune(self, args, kwargs, grid, named) -> Config:
        """Time each candidate (compile and first launch, then the benchmark); return the fastest.

        A config that fails (out of shared memory, say) is recorded in ``failures`` and skipped; the
        listeners in ``PROGRESS`` (a text line by default) hear each phase.
        """
        bench = self.do_bench or (lambda fn: do_bench(fn, warmup=self.warmup, rep=self.rep, return_mode="median"))
        saved = {n: _copy(named[n]) for n in self.restore_value}
        self.timings, self.failures = {}, {}
        first_error = None
        configs = self.pruned_configs(named, kwargs)
        _notify("start", self, configs=configs)
        for index, config in enumerate(configs):

            def call(config=config):
                for name in self.reset_to_zero:
                    named[name][...] = 0
                if config.pre_hook:
                    config.pre_hook(dict(named, **config.all_kwargs()))
                self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
                for name, value in saved.items():
                    named[name][...] = value

            try:
                _notify("compile", self, index=index, config=config)
                call()  # compiles (or loads from the cache) and launches once
                _notify("benchmark", self, index=index, config=config)
                self.timings[config] = bench(call)
            except Exception as e:  # this config cannot run here: the others still can
                self.failures[config] = f"{type(e).__name__}: {e}"
                first_error = first_error or e
            _notify("result", self, index=index, config=config)
        if not self.timings:
            raise first_error  # every config failed: the first one's error says why
        best = min(self.timings, key=self.timings.get)
        _notify("end", self, best=best)
        return best


#: Listeners of autotuning, called ``listener(event, tuner, info)``: ``start`` (``configs``), ``compile``
#: and ``benchmark`` (``index``, ``config``), ``result`` (then ``tuner.timings`` / ``tuner.failures`` have
#: it), ``end`` (``best``). Empty: a text progress line on stderr. The notebook view adds its own.
PROGRESS: list = []


def _notify(event: str, tuner, **info) -> None:
    for listener in PROGRESS or [text_progress]:
        listener(event, tuner, info)


def text_progress(event: str, tuner, info: dict) -> None:
    """One stderr line that follows the tuning: ``autotune add: 3/8 BLOCK=256, num_warps=4 benchmark``."""
    import sys

    if event == "start":
        tuner._progress_total = len(info["configs"])
        return
    total = getattr(tuner, "_progress_total", 0)
    if event in ("compile", "benchmark"):
        line = f"autotune {tuner.__name__}: {info['index'] + 1}/{total} {info['config']} {event}"
        sys.stderr.write("\r" + line.ljust(100)[:100])
    elif event == "end":
        ms = tuner.timings[info["best"]]
        failed = f", {len(tuner.failures)} failed" if tuner.failures else ""
        line = f"autotune {tuner.__name__}: best {info['best']} ({ms:.4f} ms){failed}"
        sys.stderr.write("\r" + line.ljust(100) + "\n")
    sys.stderr.flush()


def _copy(value):
    info = array_info(value)
    return info.host.copy() if info is not None and info.host is not None else value.clone()


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, warmup=25, rep=100, **kw):
    """Decorator: tune ``configs`` over the ``key`` arguments (see ``Autotuner``)."""

    def decorate(fn):
        return Autotuner(fn, configs, key, prune_configs_by, reset_to_zero, restore_value, warmup=warmup, rep=rep, **kw)

    return decorate
