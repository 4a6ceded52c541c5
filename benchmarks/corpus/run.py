"""Corpus benchmark: the same kernel sources compiled by tilelab and by Triton, best config each.

    python benchmarks/corpus/run.py                      # every case, on a CUDA GPU
    python benchmarks/corpus/run.py matmul attention     # cases whose name contains a word
    python benchmarks/corpus/run.py --compile-only       # no GPU: tilelab compiles every config for sm_90a
                                                         # and reports registers, spills, compile time
    python benchmarks/corpus/run.py --compile-time       # no GPU: seconds of each compile by step, and Triton's,
                                                         # and milliseconds of a compile each disk cache answers
    python benchmarks/corpus/run.py --per-config cross-entropy --variant maxnreg=32 --variant num_stages=1
                                                         # on a GPU: every config of both compilers (and each
                                                         # config with a variant's options) timed in turns

On a GPU each case sweeps the same config list under both compilers (``import tilelab as triton``
or ``import triton``, the kernel text is the same), checks every config's output against torch on
random inputs (outputs poisoned with NaN first), times each with ``triton.testing.do_bench``
(median), times the best config of each (and those within 5% of it: ``CONTENDERS``) and torch's
again in turns (``in_turns``: three rounds, the median of each), and prints one markdown row: the best
time of each compiler in turns and torch's, tilelab over Triton, the configs, and
each compiler's cold compile of the first config (first launch minus a warm launch, empty caches;
tilelab's modules compiled to bytecode beforehand, as an installed package has them: ``prime_bytecode``).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import inspect
import os
import re
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.corpus.cases import CASES  # noqa: E402

META_KEYS = ("num_warps", "num_stages")
_TMP = tempfile.mkdtemp(prefix="corpus_")


def prime_bytecode() -> None:
    """Compile tilelab's modules to bytecode before the first compile, as an installed package has them.

    Triton is measured as installed (its modules' bytecode written at install); tilelab runs from this
    checkout, whose modules are compiled from source on their first import where the interpreter writes no
    bytecode (``PYTHONDONTWRITEBYTECODE``, as some GPU machines set): the cold compile of the first case that
    imports a lowering module would count compiling it. Then the bytecode goes to a private cache folder.
    """
    import compileall

    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        sys.pycache_prefix = tempfile.mkdtemp(prefix="corpus_pycache_")
    package = Path(importlib.util.find_spec("tilelab").origin).parent
    compileall.compile_dir(str(package), quiet=1, workers=0)


def jit_from_source(fn, package: str):
    """``fn``'s source under ``package``'s ``@jit`` (written to a file: both jits read source files)."""
    source = textwrap.dedent(inspect.getsource(fn))
    header = f"import {package} as triton\nimport {package}.language as tl\n\n\n@triton.jit\n"
    path = os.path.join(_TMP, f"{package}_{fn.__name__}.py")
    with open(path, "w") as f:
        f.write(header + source)
    spec = importlib.util.spec_from_file_location(f"corpus_{package}_{fn.__name__}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, fn.__name__)


# ----------------------------------------------------------------------------- materializers


class Spec:
    """A tensor's dtype, shape and strides, enough to derive a kernel signature without a GPU."""

    def __init__(self, shape, dtype, strides=None):
        self.shape, self.dtype = tuple(shape), dtype
        self.strides = strides or tuple(int(_prod(self.shape[i + 1 :])) for i in range(len(self.shape)))

    def stride(self, i):
        return self.strides[i]

    def numel(self):
        return int(_prod(self.shape))

    def reshape(self, *shape):
        """The same elements seen with another (contiguous) shape, as torch's ``reshape`` of a contiguous tensor."""
        return Spec(shape, self.dtype)


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


class SpecDescriptor:
    """A host tensor descriptor over a ``Spec`` (what ``TensorDescriptor.from_tensor`` would make)."""

    def __init__(self, base, block_shape):
        self.base, self.shape, self.strides = base, base.shape, base.strides
        self.block_shape, self.padding = list(block_shape), "zero"


class SpecMaker:
    torch = None
    one = None

    def descriptor(self, x, block_shape):
        return SpecDescriptor(x, block_shape)

    def randn(self, *shape, dtype="f32"):
        return Spec(shape, dtype)

    empty = zeros = randn

    def randint(self, high, shape):
        return Spec(shape, "i32")

    def int8(self, *shape):
        return Spec(shape, "i8")

    def clone(self, x):
        return Spec(x.shape, x.dtype, x.strides)

    def transpose(self, x):
        return Spec(x.shape[::-1], x.dtype, x.strides[::-1])


class TorchMaker:
    def __init__(self):
        import torch

        self.torch = torch
        self.dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
                       "fp8e4": torch.float8_e4m3fn, "i32": torch.int32}  # fmt: skip
        self.one = torch.tensor(1.0, device="cuda")

    def randn(self, *shape, dtype="f32"):
        x = self.torch.randn(*shape, device="cuda", dtype=self.torch.float32)
        return x.to(self.dtypes[dtype])

    def empty(self, *shape, dtype="f32"):
        return self.torch.empty(*shape, device="cuda", dtype=self.dtypes[dtype])

    def zeros(self, *shape, dtype="f32"):
        return self.torch.zeros(*shape, device="cuda", dtype=self.dtypes[dtype])

    def randint(self, high, shape):
        return self.torch.randint(0, high, shape, device="cuda", dtype=self.torch.int32)

    def int8(self, *shape):
        return self.torch.randint(-128, 128, shape, device="cuda", dtype=self.torch.int8)

    def clone(self, x):
        return x.clone()

    def transpose(self, x):
        return x.t()

    def descriptor(self, x, block_shape):
        """Triton's host descriptor: both compilers take it (tilelab reads any object shaped like one)."""
        from triton.tools.tensor_descriptor import TensorDescriptor

        return TensorDescriptor.from_tensor(x, block_shape)


# ----------------------------------------------------------------------------- compile only (no GPU)


def signature_of(kernel, args, cfg, names=None):
    """tilelab signature, constants and divisibility as a Triton launch would specialize ``args``."""
    names = names or list(inspect.signature(kernel).parameters)
    runtime = [n for n in names if n not in cfg]
    sig, consts, div = {}, {k: v for k, v in cfg.items() if k not in META_KEYS}, {}
    for name, value in zip(runtime, args):
        if isinstance(value, SpecDescriptor):  # as tilelab's launch expands it: base, shapes, strides
            from tilelab.runtime.descriptors import DescriptorArg

            consts[name] = spec = DescriptorArg(tuple(value.block_shape))
            parts = dict(zip(spec.part_names(name), (value.base, *value.shape, *value.strides)))
            part_sig, part_consts, part_div = signature_of(None, list(parts.values()), {}, list(parts))
            sig.update(part_sig), consts.update(part_consts), div.update(part_div)
        elif isinstance(value, Spec):
            sig[name], div[name] = "*" + {"fp8e4": "fp8e4nv"}.get(value.dtype, value.dtype), 16
        elif isinstance(value, float):
            sig[name] = "f32"
        elif value == 1:
            consts[name] = 1
        else:
            sig[name], div[name] = "i32", (16 if value % 16 == 0 else 1)
    return sig, consts, div


def compile_only(names):
    import tilelab

    print("| case | config | registers | spills (bytes) | shared (bytes) | compile s | cp.async | ld.global scalar "
          "| PTX instructions | PTX sha1 | ptxas warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        setup = CASES[name](SpecMaker())
        kern = tilelab.jit(setup.kernel)
        for cfg in setup.configs:
            sig, consts, div = signature_of(setup.kernel, setup.args(cfg), cfg)
            short = ",".join(f"{v}" for k, v in cfg.items() if k not in ("HEAD_DIM", "CAUSAL", "HINTS"))
            t0 = time.perf_counter()
            try:
                ck = tilelab.compile(
                    kern,
                    sig,
                    consts,
                    target="cuda:sm_90a",
                    num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"],
                    divisibility=div,
                    snapshots=False,
                    cache=False,
                )
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"| {name} | {short} | ERROR {type(e).__name__}: {str(e).splitlines()[0][:120]} |", flush=True)
                continue
            dt = time.perf_counter() - t0
            md, ptx = ck.metadata, ck.asm.get("ptx", "")
            scalar = sum(ptx.count(f"ld.global.{w} ") + ptx.count(f"ld.global.{w}\t") for w in ("b16", "b8", "u16"))
            code = [line for line in ptx.splitlines() if ".loc" not in line and ".file" not in line]
            count = sum(1 for line in code if _INSTRUCTION.match(line))
            digest = hashlib.sha1("\n".join(code).encode()).hexdigest()[:10]  # same code, line numbers aside
            warned = ptxas_warnings(md)
            print(f"| {name} | {short} | {md.get('registers')} | {md.get('spills', md.get('spill_bytes'))} | "
                  f"{md.get('shared')} | {dt:.2f} | {ptx.count('cp.async.')} | {scalar} | {count} | {digest} | "
                  f"{warned} |", flush=True)  # fmt: skip


def ptxas_warnings(metadata: dict) -> str:
    """The codes of ptxas's performance warnings among a compiled kernel's notes (``emit._parse_report``)."""
    notes = " ".join(metadata.get("notes") or [])
    return " ".join(sorted(set(re.findall(r"ptxas: \((C\d+)\)", notes))))


#: a PTX instruction line: indented, an optional predicate, an opcode (directives start with ``.``, labels unindented)
_INSTRUCTION = re.compile(r"\s+(@!?%p\d+\s+)?[a-z]")


STEPS = ("frontend", "passes", "lower", "llvm", "emit", "ptxas")
TRITON_TYPES = {"f32": "fp32", "f16": "fp16", "f64": "fp64"}


def _tilelab_compile(kernel, sig, consts, div, cfg):
    import tilelab

    return tilelab.compile(
        kernel, sig, consts, target="cuda:sm_90a", num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
        divisibility=div, snapshots=False, cache=False,
    )  # fmt: skip


def _triton_compile(fn, sig, consts, div, cfg):
    """Triton's whole compile (front end to cubin) of the same specialization, for sm_90a, no GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = jit_from_source(fn, "triton")
    names = list(inspect.signature(fn).parameters)
    types = {}
    for n in names:
        t = sig.get(n)
        if type(consts.get(n)).__name__ == "DescriptorArg":  # a host descriptor: Triton's own type for it
            element = sig[f"{n}_base"][1:]
            types[n] = f"tensordesc<{TRITON_TYPES.get(element, element)}{list(consts[n].block_shape)}>"
        elif t is None:
            types[n] = "constexpr"
        else:
            types[n] = ("*" + TRITON_TYPES.get(t[1:], t[1:])) if t.startswith("*") else TRITON_TYPES.get(t, t)
    src = ASTSource(
        fn=kernel, signature=types,
        constexprs={(names.index(n),): v for n, v in consts.items() if n in names and types[n] == "constexpr"},
        attrs={(names.index(n),): [["tt.divisibility", 16]] for n, d in div.items() if d == 16 and n in names},
    )  # fmt: skip
    options = {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def compile_time(names, configs=2, repeat=3):
    """Seconds of a whole CUDA compile (no cache, warm process, best of ``repeat``) of each case's first
    ``configs`` configs: tilelab by step, and Triton's whole compile of the same source when it is installed.

    The two compilers take turns (tilelab, Triton, tilelab...): on a machine whose clock wanders, a ratio
    of two bests taken minutes apart read the same compiles at 0.85x and at 1.20x.

    The "first" columns are each compiler's first compile of the config in this process, what a user's first
    launch of it costs: tilelab's passes and lowering remember layout answers (shared-buffer choices, layout
    maps) per process, which a second compile of the same config finds, so its best can be well under its first.

    Each time is the caller's wall clock around the compile and a young collection after it, for both compilers:
    the garbage a compile leaves for Python's cyclic collector is its cost, paid right after it (tilelab keeps the
    collector off while it compiles, so its own ``compile_seconds`` would leave that collection out).
    """
    import tilelab

    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # Triton's cache would answer the second compile
    try:
        import triton  # noqa: F401
    except ImportError:
        triton = None
    print(
        "| case | config | tilelab s | "
        + " | ".join(STEPS)
        + " | Triton s | tilelab / Triton | first s tilelab / Triton | cache hit ms tilelab / Triton |"
    )
    print("|---|---|---|" + "---|" * len(STEPS) + "---|---|---|---|")
    for name in names:
        setup = CASES[name](SpecMaker())
        kern = tilelab.jit(setup.kernel)
        for cfg in setup.configs[:configs]:
            sig, consts, div = signature_of(setup.kernel, setup.args(cfg), cfg)
            short = ",".join(f"{v}" for k, v in cfg.items() if k not in ("HEAD_DIM", "CAUSAL", "HINTS"))
            runs, their_runs = [], []
            for _ in range(repeat):
                t0 = time.perf_counter()
                ck = _tilelab_compile(kern, sig, consts, div, cfg)
                gc.collect(0)
                runs.append((time.perf_counter() - t0, ck.metadata.get("stage_seconds", {})))
                if triton is not None:
                    t0 = time.perf_counter()
                    _triton_compile(setup.kernel, sig, consts, div, cfg)
                    gc.collect(0)
                    their_runs.append(time.perf_counter() - t0)
            total, steps = min(runs, key=lambda r: r[0])
            theirs = min(their_runs) if their_runs else None
            cells = " | ".join(f"{steps.get(k, 0.0):.3f}" for k in STEPS)
            ratio = f"{total / theirs:.2f}x" if theirs else "-"
            tri = f"{theirs:.3f}" if theirs else "-"
            first = f"{runs[0][0]:.3f} / " + (f"{their_runs[0]:.3f}" if their_runs else "-")
            hits = cache_hit_ms(setup, sig, consts, div, cfg, triton is not None)
            print(f"| {name} | {short} | {total:.3f} | {cells} | {tri} | {ratio} | {first} | {hits} |", flush=True)


def cache_hit_ms(setup, sig, consts, div, cfg, with_triton: bool, repeat=5) -> str:
    """Milliseconds of a compile answered by each compiler's disk cache (best of ``repeat``), as text.

    What a process pays for a kernel compiled before: a new jit object over the same source (the
    corpus makes one per case) asks ``compile`` again. Both compilers' caches go to fresh folders,
    filled by one compile first; loading the cubin onto a GPU is not counted (neither does it here).
    """
    saved = {k: os.environ.get(k) for k in ("TILELAB_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE")}
    os.environ.update(
        TILELAB_CACHE_DIR=tempfile.mkdtemp(prefix="hit_"), TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="hit_")
    )
    os.environ.pop("TRITON_ALWAYS_COMPILE", None)
    try:
        import tilelab

        def ours():
            kern = jit_from_source(setup.kernel, "tilelab")
            t0 = time.perf_counter()
            tilelab.compile(
                kern, sig, consts, target="cuda:sm_90a", num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
                divisibility=div, snapshots=False,
            )  # fmt: skip
            return time.perf_counter() - t0

        def theirs():
            t0 = time.perf_counter()
            _triton_compile(setup.kernel, sig, consts, div, cfg)
            return time.perf_counter() - t0

        best = []
        for compile_once in [ours] + ([theirs] if with_triton else []):
            compile_once()  # fills that compiler's cache
            best.append(min(compile_once() for _ in range(repeat)))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return " / ".join(f"{b * 1e3:.1f}" for b in best) + ("" if with_triton else " / -")


# ----------------------------------------------------------------------------- on the GPU


def poison(outs) -> None:
    """Fill each output with NaN, or for integers a value no correct result here takes."""
    for out in outs:
        if out.is_floating_point():
            out.fill_(float("nan"))
        else:  # the type's most negative value plus 7 (an int8 output: -121)
            out.fill_(-(2 ** (8 * out.element_size() - 1)) + 7)


def _check(setup, launch, torch):
    if setup.reset:
        setup.reset()
    else:
        poison(setup.outs)
    if setup.before:
        setup.before()
    launch()
    torch.cuda.synchronize()
    for got, want in zip(setup.outs, setup.ref()):
        got, want = got.float(), want.float()
        scale = max(want.abs().max().item(), 1e-6)
        err = (got - want).abs().max().item()
        if not err <= setup.tol * scale:  # NaN fails too
            raise AssertionError(f"wrong: max err {err:.3g} (max ref {scale:.3g})")


def _timed(fn, torch):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def launchers(setup, kern, cfg):
    """``(launch, timed)`` of one config: a launch of it, and what ``do_bench`` times (``setup.before`` first when
    the case has one). Bound here, once per config: a lambda made in a loop over configs would launch the last one."""
    args, grid = setup.args(cfg), setup.grid(cfg)

    def launch():
        return kern[grid](*args, **cfg)

    before = setup.before
    return launch, ((lambda: (before(), launch())) if before else launch)


#: configs whose sweep time is within this factor of the best one's are timed again in turns (``contenders``)
CONTENDERS = 1.05


def sweep(setup, package, torch, do_bench):
    """(best ms, best cfg, cold compile s of the first config, errors, contenders) of one compiler.

    ``contenders`` are ``(cfg, timed function, compiled kernel)`` of the configs within ``CONTENDERS`` of
    the best sweep time, the best first: the sweep times each config once, as the card's clocks wander, so
    a config a few percent behind may be the faster one (two sweeps of the 8192x12288x4096 matmul kept
    configs at 1.43 and 1.44 ms where the per-config table had another at 1.33 ms); ``run_gpu`` times
    them again in turns (``fastest_in_turns``) and keeps the fastest.
    """
    kern = jit_from_source(setup.kernel, package)
    compile_s, errors, compiled, timed = None, [], {}, []
    for i, cfg in enumerate(setup.configs):
        launch, fn = launchers(setup, kern, cfg)
        try:
            first = _timed(lambda i=i, launch=launch: compiled.__setitem__(i, launch()), torch)  # keeps the kernel
            if i == 0:
                compile_s = first - min(_timed(launch, torch) for _ in range(3))
            _check(setup, launch, torch)
            ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
        except Exception as e:  # noqa: BLE001 - a failing config reports, the others go on
            errors.append(f"{_cfg_text(cfg)}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
            traceback.print_exc(file=sys.stderr)
            continue
        timed.append((ms, i, cfg, fn))
    if not timed:
        return None, None, compile_s, errors, []
    timed.sort(key=lambda t: t[0])
    best, _, best_cfg, _ = timed[0]
    contenders = [(cfg, fn, compiled.get(i)) for ms, i, cfg, fn in timed if ms <= best * CONTENDERS]
    return best, best_cfg, compile_s, errors, contenders


def in_turns(fns: dict, do_bench, rounds=3) -> dict:
    """The median over ``rounds`` of each function's time, the functions timed in turns (the first rotating).

    Why: a compute-bound kernel's time depends on the card's clocks, which follow its temperature and
    power; timed right after its own sweep, the same PTX measured 0.192 ms in one row and 0.206 ms in
    the next (a 4096^3 matmul, with and without hints). Timed in turns, each gets the same conditions.
    """
    names = list(fns)
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            times[n].append(do_bench(fns[n], warmup=25, rep=100, return_mode="median"))
    return {n: sorted(ts)[len(ts) // 2] for n, ts in times.items()}


def fastest_in_turns(contenders: dict, torch_fn, do_bench) -> tuple[dict, float]:
    """``({compiler: (ms, cfg, compiled kernel)} of each compiler's fastest contender, torch's ms)``.

    Every contender of both compilers (``sweep``'s, by compiler) and torch's function are timed in turns
    (``in_turns``); a compiler without contenders (every config failed) gets ``(None, None, None)``.
    """
    fns = {(pkg, j): c[1] for pkg, cs in contenders.items() for j, c in enumerate(cs)}
    timed = in_turns({**fns, "torch": torch_fn}, do_bench)
    best = {}
    for pkg, cs in contenders.items():
        ms, j = min(((timed[pkg, j], j) for j in range(len(cs))), default=(None, None))
        best[pkg] = (None, None, None) if j is None else (ms, cs[j][0], cs[j][2])
    return best, timed["torch"]


def _dump(ck, folder, stem):
    asm = getattr(ck, "asm", None) or {}
    stem = re.sub(r"[^A-Za-z0-9.]+", "_", stem)
    os.makedirs(folder, exist_ok=True)
    for kind, text in asm.items():
        if isinstance(text, str) and kind in ("ptx", "ttgir", "llir", "tile"):
            Path(folder, f"{stem}.{kind}").write_text(text)


def _cfg_text(cfg):
    skip = ("HEAD_DIM", "CAUSAL", "HINTS", "GROUP_SIZE_M", "NUM_SMS", "n_heads", "ROWS_PER_PROGRAM")
    vals = [str(v) for k, v in cfg.items() if k not in skip and k not in META_KEYS]
    return "x".join(vals) + f"/{cfg['num_warps']}w/{cfg['num_stages']}s"


def _cell(ms, setup):
    if ms is None:
        return "fails"
    if setup.flops:
        return f"{ms:.3f} ms ({setup.flops / ms / 1e9:.0f} TFLOP/s)"
    return f"{ms:.3f} ms ({setup.nbytes / ms / 1e6:.0f} GB/s)"


def run_gpu(names, out_path=None, dump=None, cases=None):
    """Each case of ``names`` (keys of ``cases``, the corpus's ``CASES`` unless given) swept, checked and timed."""
    import torch
    import triton
    from triton.testing import do_bench

    cases = CASES if cases is None else cases
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_cache_"))
    os.environ.setdefault("TILELAB_CACHE_DIR", tempfile.mkdtemp(prefix="tilelab_cache_"))
    maker = TorchMaker()
    head = (f"device: {torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}\n\n"
            "| case | Triton | tilelab | torch | tilelab / Triton | best config Triton / tilelab "
            "| cold compile s Triton / tilelab |\n|---|---|---|---|---|---|---|")  # fmt: skip
    print(head, flush=True)
    rows, notes = [head], []
    for name in names:
        torch.manual_seed(0)
        try:
            setup = cases[name](maker)
            res = {pkg: sweep(setup, pkg, torch, do_bench) for pkg in ("triton", "tilelab")}
            best, torch_ms = fastest_in_turns({pkg: r[4] for pkg, r in res.items()}, setup.torch_fn, do_bench)
            for pkg, (_, _, compiled) in best.items():
                if dump and compiled is not None:  # its compiled texts, to read the two compilers' code side by side
                    _dump(compiled, dump, f"{name}.{pkg}")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            row = f"| {name} | ERROR {type(e).__name__}: {str(e).splitlines()[0][:100]} | | | | | |"
            print(row, flush=True)
            rows.append(row)
            continue
        (_, _, tr_c, tr_err, _), (_, _, tl_c, tl_err, _) = res["triton"], res["tilelab"]
        (tr, tr_cfg, _), (tl, tl_cfg, _) = best["triton"], best["tilelab"]
        ratio = f"{tl / tr:.2f}x" if tl and tr else "-"
        cfgs = f"{_cfg_text(tr_cfg) if tr_cfg else '-'} / {_cfg_text(tl_cfg) if tl_cfg else '-'}"
        comp = f"{tr_c:.2f} / {tl_c:.2f}" if tr_c is not None and tl_c is not None else f"{tr_c} / {tl_c}"
        cells = [name, _cell(tr, setup), _cell(tl, setup), _cell(torch_ms, setup), ratio, cfgs, comp]
        row = "| " + " | ".join(cells) + " |"
        print(row, flush=True)
        rows.append(row)
        notes += [f"- {name}, Triton {e}" for e in tr_err] + [f"- {name}, tilelab {e}" for e in tl_err]
    text = "\n".join(rows) + ("\n\nConfigs that failed:\n" + "\n".join(notes) if notes else "") + "\n"
    if notes:
        print("\n".join(notes), flush=True)
    if out_path:
        Path(out_path).write_text(text)


def variants_of(configs: list, variants: list) -> list:
    """``configs``, then each config with each variant's options over it (``--variant maxnreg=32,num_stages=1``).

    A variant is ``name=int`` pairs, comma-separated; its options must be launch options or the
    config's own constexprs (a misspelled name would silently make a copy of the config).
    """
    out = list(configs)
    for text in variants:
        try:
            pairs = {k: int(v) for k, v in (item.split("=", 1) for item in text.split(","))}
        except ValueError:
            raise SystemExit(f"--variant {text}: expected name=int pairs, comma-separated") from None
        for cfg in configs:
            unknown = [k for k in pairs if k not in cfg and k not in ("maxnreg", *META_KEYS)]
            if unknown:
                raise SystemExit(f"--variant {text}: {unknown[0]} is neither a launch option nor a constexpr")
            out.append({**cfg, **pairs})
    return out


def _variant_text(cfg) -> str:
    return _cfg_text({k: v for k, v in cfg.items() if k != "maxnreg"}) + (
        f"/maxnreg {cfg['maxnreg']}" if "maxnreg" in cfg else ""
    )


def per_config(names, variants=(), rounds=5, cases=None) -> None:
    """Each config of each case (and its ``variants``), both compilers: checked against torch, then all
    timed in turns (``in_turns``, ``rounds`` rounds, the median of each), one row per config and compiler."""
    import torch
    from triton.testing import do_bench

    cases = CASES if cases is None else cases
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_cache_"))
    os.environ.setdefault("TILELAB_CACHE_DIR", tempfile.mkdtemp(prefix="tilelab_cache_"))
    maker = TorchMaker()
    print(f"device: {torch.cuda.get_device_name()}\n\n| case | compiler | config | ms |\n|---|---|---|---|")
    for name in names:
        torch.manual_seed(0)
        setup = cases[name](maker)
        fns = {}
        for package in ("triton", "tilelab"):
            kern = jit_from_source(setup.kernel, package)
            for cfg in variants_of(setup.configs, variants):
                launch, timed = launchers(setup, kern, cfg)
                key = (package, _variant_text(cfg))
                try:
                    _check(setup, launch, torch)
                except Exception as e:  # noqa: BLE001 - a failing config reports, the others go on
                    print(f"| {name} | {key[0]} | {key[1]} | {type(e).__name__}: {str(e).splitlines()[0][:80]} |")
                    continue
                fns[key] = timed
        for (package, text), ms in in_turns(fns, do_bench, rounds).items():
            print(f"| {name} | {package} | {text} | {ms:.4f} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="*", help="run the cases whose name contains one of these words")
    parser.add_argument("--compile-only", action="store_true", help="compile for sm_90a with tilelab, no GPU")
    parser.add_argument(
        "--compile-time", action="store_true", help="seconds of each compile by step, and Triton's, no GPU needed"
    )
    parser.add_argument("--out", help="also write the table to this file")
    parser.add_argument("--dump", help="write each compiler's code of each case's best config to this folder")
    parser.add_argument("--per-config", action="store_true", help="on a GPU: every config timed, in turns")
    parser.add_argument(
        "--variant", action="append", default=[], help="with --per-config: also each config with these options"
    )
    args = parser.parse_args(argv)
    names = [n for n in CASES if not args.words or any(w in n for w in args.words)]
    if args.compile_only:
        compile_only(names)
    elif args.per_config:
        per_config(names, args.variant)
    elif args.compile_time:
        compile_time(names)
    else:
        run_gpu(names, args.out, args.dump)


if __name__ == "__main__":
    prime_bytecode()  # before any compile: the modules the compiler imports on first use read it
    main()
