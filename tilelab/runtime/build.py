"""Compiling a kernel for one specialization: frontend, passes, target, and the disk cache.

``compile_kernel`` is the one road from a Python kernel to a ``CompiledKernel``; both
``kernel[grid](...)`` (through ``JITFunction``) and ``tilelab.compile`` take it. A disk
cache hit skips the frontend and the passes: the target reloads its artifact, and the final
tile IR is parsed back from text, at once where the target's launcher needs it, else (CUDA)
on the first read of ``CompiledKernel.module``: a hit costs a few milliseconds, the parse ~10 more.
A target may hand back a quick tier first (``Artifact.upgrade``): its optimized code is made and
cached in the background (tiers.py).

    ck = compile_kernel(add, {"x": "*f32", "n": "i32"}, {"BLOCK": 128}, {"x": 16, "n": 1},
                        options_for("interpret"))
"""

from __future__ import annotations

import gc
import inspect
import time
from dataclasses import dataclass

from tilelab._switch import SharedSwitch
from tilelab.compiler.options import CompileOptions

from . import prefetch, stages, tiers
from .cache import DiskCache
from .compiled import CompiledKernel
from .keys import Specialization
from .options import compile_options
from .targets import Artifact, get_target
from .texts import merged, ready_texts, with_makers

SMALL_IR = 16_000  # pass snapshots longer than this are not written to disk


def options_for(
    target: str, num_warps=None, num_stages=None, debug: bool = False, fp_fusion=None, reflect_ftz=None, maxnreg=None
) -> CompileOptions:
    """The ``CompileOptions`` of a compile for the target named ``target`` (its ``arch`` and warp size included)."""
    found = get_target(target)
    arch, warp_size = getattr(found, "arch", None), getattr(found, "warp_size", None)
    return compile_options(target, num_warps, num_stages, debug, arch, warp_size, fp_fusion, reflect_ftz, maxnreg)


def compile_kernel(fn, signature, constants, divisibility, options: CompileOptions, snapshots=False, cache=True):
    """Compile (or load from the disk cache) ``fn`` for this specialization and ``options`` (``options_for``)."""
    prefetch.wait()  # the compiler's imports happen on one thread at a time (prefetch.py)
    disk = DiskCache() if cache else None
    key = Specialization.of(signature, constants, divisibility, options).digest(fn, snapshots)
    if disk:
        tiers.wait(key)  # the same kernel's optimized code is on its way to the cache: take it from there
    entry = disk.get(key, PAYLOAD_SCHEMA) if disk else None
    if entry is not None:
        loaded = _from_entry(fn, entry, options, constants)
        if loaded is not None:
            return loaded
    ck = _compile_fresh(fn, signature, constants, divisibility, options, snapshots)
    store = (lambda done: disk.put(key, _to_payload(done), done.artifact.blobs)) if disk else None
    if ck.artifact.upgrade is not None:
        tiers.submit(ck, store, key)  # the quick tier runs now; the cache gets the optimized one
    elif store is not None:
        store(ck)
    return ck


def _pause_collector() -> None:
    global _collector_was_enabled
    _collector_was_enabled = gc.isenabled()
    gc.disable()


def _resume_collector() -> None:
    if _collector_was_enabled:
        gc.enable()


_collector_was_enabled = False
#: Python's cyclic garbage collector off while compiles run (on again after the last, as the caller had it).
#: A compile allocates ~10 objects per LLVM instruction (llvmlite's IR, the tile IR): enough to set off
#: the collector's full passes, which walk every object of the process (torch's and Triton's modules
#: too): 0.05-0.15 s each, in one compile of two. Off, the compile's garbage waits for the next young
#: collection after it, which sees only young objects. Reference counting frees the rest as before.
collector_paused = SharedSwitch(_pause_collector, _resume_collector).held


@collector_paused()
def _compile_fresh(fn, signature, constants, divisibility, options: CompileOptions, snapshots):
    start = time.perf_counter()
    target = get_target(options.target)
    module = stages.build(fn, signature, constants, divisibility)
    built = time.perf_counter()
    records = stages.run_passes(module, options, target.pipeline, snapshots)  # module.options = options
    passed = time.perf_counter()
    artifact = target.compile(module, options)
    metadata = {"shared": 0, "registers": None, "spills": None, **_option_metadata(options), **artifact.metadata}
    metadata["compile_seconds"] = time.perf_counter() - start
    #: where the time went: the frontend, the passes, then the backend's steps (``ptx``, ``ptxas`` ...)
    metadata["stage_seconds"] = {
        "frontend": built - start,
        "passes": passed - built,
        **artifact.metadata.get("stage_seconds", {}),
    }
    asm = merged({"tile": stages.print_ir(module)}, artifact.asm)  # lazy texts stay lazy
    ck = _kernel(fn, module, signature, constants, options, asm, metadata, records)
    ck.artifact = artifact
    ck.launcher = target.load(artifact, module)
    return ck


def _option_metadata(options: CompileOptions) -> dict:
    """What a kernel's ``metadata`` says of its options: launch geometry and ``debug``."""
    return {"num_warps": options.num_warps, "num_stages": options.num_stages, "debug": options.debug}


def _kernel(fn, module, signature, constants, options, asm, metadata, records, attrs=None) -> CompiledKernel:
    """The ``CompiledKernel``; ``attrs``: the kernel function's attributes where ``module`` is not parsed yet."""
    attrs = module.kernel.attrs if attrs is None else attrs
    source, filename, first_line = _origin(fn, attrs)
    return CompiledKernel(
        name=fn.__name__,
        target=options.target,
        signature=dict(signature),
        constants=dict(constants),
        options=options,
        module_source=module,
        asm=asm,
        metadata=metadata,
        passes=list(records),
        source=source,
        filename=filename,
        first_line=first_line,
        arg_names=list(attrs.get("arg_names", ())),
    )


#: Where the kernel came from: the frontend records these on the kernel function.
_ORIGIN_ATTRS = ("source", "filename", "first_line")


def _origin(fn, attrs: dict) -> tuple[str, str, int]:
    """``(source, filename, first_line)`` of the kernel: its function's ``attrs``, else read from ``fn``.

    Why the file is read only when an attribute is missing: ``inspect`` tokenizes it again,
    ~0.4 ms of every first compile, for values the frontend has already recorded.
    """
    if all(k in attrs for k in _ORIGIN_ATTRS):
        return attrs["source"], attrs["filename"], attrs["first_line"]
    try:
        lines, first = inspect.getsourcelines(fn)
        read = ("".join(lines), inspect.getsourcefile(fn) or "<unknown>", first)
    except (OSError, TypeError):
        read = ("", "<unknown>", 0)
    return tuple(attrs.get(k, v) for k, v in zip(_ORIGIN_ATTRS, read))


@dataclass
class StoredPassRecord:
    """A pass record read back from the disk cache (same fields as the pass manager's)."""

    name: str
    seconds: float
    changed: bool
    ir_before: str | None = None
    ir_after: str | None = None


def _small(text):
    return text if text is not None and len(text) <= SMALL_IR else None


def _to_payload(ck: CompiledKernel) -> dict:
    records = [
        {
            "name": r.name,
            "seconds": r.seconds,
            "changed": r.changed,
            "ir_before": _small(r.ir_before),
            "ir_after": _small(r.ir_after),
        }
        for r in ck.passes
    ]
    return {
        "name": ck.name,
        "signature": ck.signature,
        "options": ck.options.key(),
        # the kernel's own texts (tile IR); its artifact's (LLVM IR, PTX) are stored once, under artifact_asm.
        # Texts a target emits on demand are rebuilt after loading.
        "asm": {k: v for k, v in ready_texts(ck.asm).items() if k not in ck.artifact.asm},
        "metadata": ck.metadata,
        "artifact_asm": ready_texts(ck.artifact.asm),
        "artifact_metadata": ck.artifact.metadata,
        "passes": records,
        "func_attrs": _func_attrs(ck.module),
        "kernel": {"sym_name": ck.module.kernel.sym_name, "arg_names": ck.arg_names},
        "launch_facts": ck.launch_facts(),
    }


#: Function attributes the IR text does not carry, kept beside it in the cache entry.
_KEPT_FUNC_ATTRS = ("arg_divisibility", "source", "filename", "first_line", "kernel")


def _func_attrs(module) -> dict:
    """Per function, the attributes the printer leaves out (JSON-safe)."""
    out = {}
    for f in module.funcs:
        kept = {k: f.attrs[k] for k in _KEPT_FUNC_ATTRS if k in f.attrs}
        out[f.sym_name] = {k: list(v) if isinstance(v, tuple) else v for k, v in kept.items()}
    return out


def _restore_func_attrs(module, saved: dict) -> None:
    for f in module.funcs:
        for k, v in saved.get(f.sym_name, {}).items():
            f.attrs[k] = tuple(v) if isinstance(v, list) else v


#: the fields of a cache entry's payload, checked before any is used (a bad entry is a miss, then rebuilt)
PAYLOAD_SCHEMA = {
    "name": str,
    "signature": {str: str},
    "options": dict,
    "asm": {"tile": str},
    "metadata": dict,
    "artifact_asm": {str: str},
    "artifact_metadata": dict,
    "passes": [{"name": str, "seconds": (int, float), "changed": bool, "ir_before": (str, type(None))}],
    "kernel": {"sym_name": str, "arg_names": [str]},
    "launch_facts": {"written": [str], "promised": [[(str, int)]]},
}


def _from_entry(fn, entry, options: CompileOptions, constants) -> CompiledKernel | None:
    """Rebuild a ``CompiledKernel`` from a cache entry; ``None`` when anything in it does not fit.

    An entry the parser, the target's checks (``load``) or the rebuild reject is rebuilt, never
    trusted: a damaged entry must cost a compile, not a crash on every run.
    """
    try:
        return _rebuild(fn, entry, options, constants)
    except Exception:  # noqa: BLE001 - any failure of a stored entry means: compile afresh
        return None


def _rebuild(fn, entry, options: CompileOptions, constants) -> CompiledKernel:
    payload, blobs = entry
    target = get_target(options.target)
    kernel = payload["kernel"]
    attrs = dict(payload.get("func_attrs", {}).get(kernel["sym_name"], {}), arg_names=kernel["arg_names"])
    moved = _relocation(fn, attrs)
    if moved is not None:
        attrs.update(filename=moved.file, first_line=moved.first)
        payload = dict(payload, artifact_metadata=moved.ops_table(payload["artifact_metadata"]))

    def module():
        return _parsed(payload, constants, options, moved)

    # A target that launches from the artifact alone never needs the IR: it is parsed when first read.
    parsed = None if getattr(target, "loads_from_artifact", False) else module()
    artifact = Artifact(with_makers(target, payload["artifact_asm"], options), payload["artifact_metadata"], blobs)
    records = [StoredPassRecord(**r) for r in payload["passes"]]
    ck = _kernel(
        fn, module if parsed is None else parsed, payload["signature"], constants, options,
        merged(payload["asm"], artifact.asm), payload["metadata"], records, attrs,
    )  # fmt: skip
    ck.restore_launch_facts(payload["launch_facts"])
    ck.artifact = artifact
    ck.launcher = target.load(artifact, parsed)
    ck.from_cache = True
    return ck


def _parsed(payload: dict, constants, options: CompileOptions, moved):
    """The tile IR module of a cache entry, as the compile that stored it left it (relocated by ``moved``)."""
    module = stages.parse_ir(payload["asm"]["tile"])
    _restore_func_attrs(module, payload.get("func_attrs", {}))
    if moved is not None:
        moved.relocate(module)
    module.attrs.setdefault("constants", dict(constants))
    module.attrs.setdefault("signature", dict(payload["signature"]))
    module.options = options
    return module


@dataclass
class _Relocation:
    """Moves the locations of an entry compiled from another file (same kernel text) into ``fn``'s file.

    Why: the key covers the kernel's text, not where it lives, so two scripts with the same
    kernel share an entry; an error must still name the launching script's file and line
    (``lineB.py:14``), not those of the script that compiled it first (``lineA.py:7``).
    """

    old_file: str
    old_first: int
    lines: int
    file: str
    first: int

    def moved(self, file, line):
        if file == self.old_file and self.old_first <= line <= self.old_first + self.lines:
            return self.file, line + self.first - self.old_first
        return file, line

    def relocate(self, module) -> None:
        """Move the module's op locations and its kernel's origin, in place."""
        for op in module.walk():
            file, line = self.moved(op.loc.file, op.loc.line)
            if (file, line) != (op.loc.file, op.loc.line):
                op.loc = type(op.loc)(file, line, op.loc.col)
        module.kernel.attrs.update(filename=self.file, first_line=self.first)

    def ops_table(self, metadata: dict) -> dict:
        """``metadata`` with the locations of its op table (``ops``, the CPU target's) moved."""
        ops = metadata.get("ops")
        if not isinstance(ops, dict):
            return metadata
        table = {}
        for op_id, info in ops.items():
            file, line = self.moved(info.get("file"), info.get("line"))
            table[op_id] = dict(info, file=file, line=line)
        return dict(metadata, ops=table)


def _relocation(fn, attrs: dict) -> _Relocation | None:
    """The ``_Relocation`` of an entry whose kernel (``attrs``) was compiled from another place than ``fn``."""
    old_file, old_first = attrs.get("filename"), attrs.get("first_line")
    code = fn.__code__
    if old_file is None or old_first is None or (old_file == code.co_filename and old_first == code.co_firstlineno):
        return None
    lines = len(attrs.get("source", "").splitlines())
    return _Relocation(old_file, old_first, lines, inspect.getsourcefile(fn) or code.co_filename, code.co_firstlineno)
