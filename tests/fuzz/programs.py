"""Random well-typed tile programs for the differential fuzzer.

``generate(seed)`` returns a ``Program``: the source of one ``@tilelab.jit`` kernel, the
inputs it reads and the outputs it writes. The same seed always gives the same program
and inputs, so a mismatch is replayed from its seed alone::

    program = generate(1234)
    print(program.source)
    # @tilelab.jit
    # def kernel(x0, x1, out0, n, BLOCK: tl.constexpr):
    #     offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    #     ...

A program is a straight line of statements over tiles of one shape (1-D ``[BLOCK]`` or
2-D ``[R, C]``); each statement builds a new value from earlier ones with one feature:
elementwise arithmetic over every dtype (Triton's promotion decides the result type),
casts and bitcasts, comparisons and ``where``, masked loads, reductions and scans
(broadcast back to the tile), loop-carried accumulators (``for`` and ``while``), an ``if`` on a scalar,
atomics and ``tl.dot``. The generator tracks each value's kind (bool, int, float) and
shape, so the program is well typed by construction; it guards what C leaves undefined
(division by zero, shifts past the width). Values whose result depends on rounding
order or on a math library (``exp``, float sums, float dot, float atomics) are marked
*approximate*: they only flow into operations that keep a relative error small, and are
compared within a tolerance; everything else is compared bit for bit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DTYPES = ["int1", *INTS, *FLOATS]
WIDTH = {"int1": 1, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "bfloat16": 16}
WIDTH.update({"int32": 32, "uint32": 32, "float32": 32, "int64": 64, "uint64": 64, "float64": 64})
MATH = ["exp", "log", "sqrt", "sin", "cos", "exp2", "log2", "rsqrt"]
MATH += [f"extra.libdevice.{fn}" for fn in ("rint", "cbrt", "log10", "erfc", "asinh", "atanh", "exp10")]


def kind(dtype: str) -> str:
    """``"bool"``, ``"int"`` or ``"float"``."""
    return "bool" if dtype == "int1" else ("float" if dtype in FLOATS else "int")


def numpy_dtype(dtype: str) -> np.dtype:
    if dtype == "int1":
        return np.dtype(np.bool_)
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def promote(a: str, b: str, div: bool = False) -> str:
    """Triton's result type of a binary arithmetic op on tensors of ``a`` and ``b``."""
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if {"float16", "bfloat16"} == {a, b}:
        return "float32"
    for half in ("float16", "bfloat16"):
        if half in (a, b):
            return "float32" if div else half
    if a == b:
        return a
    signed_a, signed_b = not a.startswith("uint"), not b.startswith("uint")
    if signed_a == signed_b:
        return a if WIDTH[a] > WIDTH[b] else b
    unsigned, signed = (a, b) if not signed_a else (b, a)
    return unsigned if WIDTH[unsigned] >= WIDTH[signed] else signed


#: relative error an approximate value may carry, by dtype (the math functions are documented within a
#: few ULPs; sums and scans in a different order differ by rounding of their partial results)
TOLERANCE = {"float16": 2e-2, "bfloat16": 1e-1, "float32": 1e-4, "float64": 1e-10}


@dataclass
class Value:
    name: str
    dtype: str
    exact: bool = True  # False: rounding order or a math library decides the last bits
    rtol: float = 0.0  # an approximate value's relative error: its least precise source's tolerance


@dataclass
class Program:
    seed: int
    source: str
    shape: tuple  # the tile shape: (BLOCK,) or (R, C)
    grid: int
    n: int  # elements per launch that the masks let through
    inputs: dict  # name -> numpy array
    outputs: dict  # name -> (numpy dtype, number of elements, exact, relative tolerance when approximate)
    features: set = field(default_factory=set)


class Builder:
    """Emits statements and keeps the typed values they define."""

    def __init__(self, rng: random.Random, shape: tuple):
        self.rng = rng
        self.shape = shape
        self.lines: list[str] = []
        self.values: list[Value] = []
        self.features: set[str] = set()
        self.count = 0

    def define(self, expr: str, dtype: str, exact: bool = True, rtol: float = 0.0) -> Value:
        """``vN = expr`` cast to the type the generator predicts, so every later use sees ``dtype``.

        An approximate value carries ``rtol``, at least its own type's tolerance: an f32 quotient
        multiplied by an f64 stays within f32's error, not f64's.
        """
        self.count += 1
        rtol = 0.0 if exact else max(rtol, TOLERANCE.get(dtype, 0.0))
        value = Value(f"v{self.count}", dtype, exact, rtol)
        self.lines.append(f"{value.name} = ({expr}).to(tl.{dtype})")
        self.values.append(value)
        return value

    def pick(self, kinds=("bool", "int", "float"), exact_only=False) -> Value | None:
        pool = [v for v in self.values if kind(v.dtype) in kinds and (v.exact or not exact_only)]
        return self.rng.choice(pool) if pool else None

    def literal(self, for_kind: str) -> str:
        if for_kind == "float" or self.rng.random() < 0.15:
            return repr(self.rng.choice([0.5, 2.0, -1.25, 3.0, 1e-3, 1e30, -7.5, 65504.0]))
        return str(self.rng.choice([0, 1, 2, 3, 5, 7, 16, 100]))


def _binary(b: Builder) -> Value | None:
    x = b.pick(exact_only=True)
    if x is None:
        return None
    rng = b.rng
    y = b.pick(exact_only=True)
    op = rng.choice(["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "max", "min", "lit"])
    kx, ky = kind(x.dtype), kind(y.dtype)
    if op == "lit":
        return _with_literal(b, x)
    if op in ("max", "min"):
        if "bool" in (kx, ky):
            return None
        b.features.add("minmax")
        return b.define(f"tl.{op}imum({x.name}, {y.name})", promote(x.dtype, y.dtype))
    if op in ("&", "|", "^"):
        if "float" in (kx, ky):
            return None
        return b.define(f"{x.name} {op} {y.name}", promote(x.dtype, y.dtype))
    if op in ("<<", ">>"):
        if kx != "int" or ky != "int":
            return None
        b.features.add("shift")
        return b.define(f"{x.name} {op} ({y.name} & 7)", promote(x.dtype, y.dtype))
    if op in ("//", "%"):
        return _division(b, x, y, op)
    if op == "/":
        if "float" not in (kx, ky) and x.dtype.startswith("uint") != y.dtype.startswith("uint"):
            return None  # Triton refuses / of integers that differ in signedness
        dtype = promote(x.dtype, y.dtype, div=True) if "float" in (kx, ky) else "float32"
        if dtype != "float32":
            return b.define(f"{x.name} / {y.name}", dtype)
        # f32 ``/`` is within 2 ulp on the GPU (``div.full.f32``, as in Triton); ``div_rn`` rounds correctly
        if rng.random() < 0.5:
            b.features.add("div_rn")
            return b.define(f"tl.math.div_rn({x.name}.to(tl.float32), {y.name}.to(tl.float32))", dtype)
        b.features.add("fdiv")
        return b.define(f"{x.name} / {y.name}", dtype, exact=False)
    return b.define(f"{x.name} {op} {y.name}", promote(x.dtype, y.dtype))


def _with_literal(b: Builder, x: Value) -> Value:
    """``x op literal``: a Python literal is weakly typed (it takes the tensor's type unless of a higher kind)."""
    kx, lit = kind(x.dtype), b.literal(kind(x.dtype))
    lit_kind = "int" if lit.lstrip("-").isdigit() else "float"
    if kx == "float":
        dtype = x.dtype
    elif lit_kind == "float":
        dtype = "float32"
    else:
        dtype = "int32" if kx == "bool" else x.dtype
    sym = b.rng.choice(["+", "-", "*"])
    b.features.add("literal")
    return b.define(f"{x.name} {sym} {lit}" if b.rng.random() < 0.5 else f"{lit} {sym} {x.name}", dtype)


def _division(b: Builder, x: Value, y: Value, op: str) -> Value | None:
    kx, ky = kind(x.dtype), kind(y.dtype)
    if "float" in (kx, ky):
        if op == "//":
            return None
        b.features.add("fmod")
        return b.define(f"{x.name} % {y.name}", promote(x.dtype, y.dtype, div=True))
    if "bool" in (kx, ky) or x.dtype.startswith("uint") != y.dtype.startswith("uint"):
        return None
    b.features.add("intdiv")
    # the divisor in 1..8: no division by zero, no INT_MIN // -1
    return b.define(f"{x.name} {op} (({y.name} & 7) + 1)", promote(x.dtype, y.dtype))


def _unary(b: Builder) -> Value | None:
    rng = b.rng
    x = b.pick(exact_only=True)
    op = rng.choice(["neg", "not", "abs", "cast", "bitcast", "cmp", "where", "math", "floor"])
    kx = kind(x.dtype)
    if op == "neg":
        b.features.add("neg")
        return b.define(f"-{x.name}", x.dtype)
    if op == "not":
        if kx == "float":
            return None
        return b.define(f"~{x.name}", x.dtype)
    if op == "abs":
        return b.define(f"tl.abs({x.name})", x.dtype) if kx != "bool" else None
    if op == "cast":
        b.features.add("cast")
        return b.define(f"{x.name}", rng.choice(DTYPES))
    if op == "bitcast":
        return _bitcast(b, x)
    if op == "cmp":
        y = b.pick(exact_only=True)
        sym = rng.choice(["<", "<=", ">", ">=", "==", "!="])
        return b.define(f"{x.name} {sym} {y.name}", "int1")
    if op == "where":
        c, y = b.pick(exact_only=True), b.pick(exact_only=True)
        return b.define(f"tl.where({c.name} != 0, {x.name}, {y.name})", promote(x.dtype, y.dtype))
    if op == "floor":
        if kx != "float" or x.dtype in ("float16", "bfloat16"):
            return None
        return b.define(f"tl.{rng.choice(['floor', 'ceil'])}({x.name})", x.dtype)
    return _math(b)


def _bitcast(b: Builder, x: Value) -> Value | None:
    """A bitcast of an integer: a float's bits would show a NaN's sign and payload, which no target specifies."""
    if kind(x.dtype) != "int":
        return None
    same = [d for d in DTYPES if d != "int1" and WIDTH[d] == WIDTH[x.dtype]]
    b.features.add("bitcast")
    target = b.rng.choice(same)
    return b.define(f"{x.name}.to(tl.{target}, bitcast=True)", target)


def _math(b: Builder) -> Value | None:
    # an exact argument: an approximate one would carry its error into a function that may magnify it
    # without bound (the cosine of an approximate ``exp`` of 20 is any number in [-1, 1])
    x = b.pick(("float",), exact_only=True)
    if x is None or x.dtype not in ("float32", "float64"):
        return None
    b.features.add("math")
    fn = b.rng.choice(MATH)
    return b.define(f"tl.{fn}({x.name})", x.dtype, exact=False)


def _approximate(b: Builder) -> Value | None:
    """An operation that keeps a relative error small, on an approximate value."""
    x = b.pick(("float",))
    if x is None or x.exact:
        return None
    y = b.pick(("float",))
    op = b.rng.choice(["*", "max", "min"])
    expr = f"{x.name} * {y.name}" if op == "*" else f"tl.{op}imum({x.name}, {y.name})"
    return b.define(expr, promote(x.dtype, y.dtype), exact=False, rtol=max(x.rtol, y.rtol))


def _reduction(b: Builder) -> Value | None:
    rng = b.rng
    x = b.pick(("int", "float"), exact_only=True)
    if x is None:
        return None
    fn = rng.choice(["sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod"])
    if fn == "cumprod" and kind(x.dtype) == "float":
        fn = "cumsum"  # a float product overflows or not depending on the scan's order: inf * 0 vs 0
    axis = rng.randrange(len(b.shape))
    b.features.add(fn)
    exact = kind(x.dtype) != "float" or fn in ("max", "min", "argmax", "argmin")
    if fn in ("sum", "cumsum") and x.dtype in ("float16", "bfloat16"):
        # a half-precision sum in another order differs by ulps of its largest partial sum, which no
        # tolerance relative to the result bounds (82.75 against 80.0 after cancellation): sum in f32
        x = Value(f"{x.name}.to(tl.float32)", "float32")
    if fn in ("cumsum", "cumprod"):
        dtype = _sum_dtype(x.dtype)
        reverse = ", reverse=True" if rng.random() < 0.3 else ""
        return b.define(f"tl.{fn}({x.name}, axis={axis}{reverse})", dtype, exact)
    dtype = "int32" if fn.startswith("arg") else (_sum_dtype(x.dtype) if fn == "sum" else x.dtype)
    reduced = f"tl.{fn}({x.name}, axis={axis})"
    if len(b.shape) == 2:
        reduced = f"tl.expand_dims({reduced}, {axis})"
    return b.define(f"{reduced} + tl.zeros({list(b.shape)}, tl.{dtype})", dtype, exact)


def _sum_dtype(dtype: str) -> str:
    """Triton sums small integers in 32 bits."""
    if kind(dtype) == "int" and WIDTH[dtype] < 32:
        return "uint32" if dtype.startswith("uint") else "int32"
    return dtype


def _loop(b: Builder) -> Value | None:
    x, y = b.pick(exact_only=True), b.pick(("int",), exact_only=True)
    if x is None or y is None or kind(x.dtype) == "bool":
        return None
    b.features.add("loop")
    trips = b.rng.randint(0, 4)
    b.count += 1
    acc = f"v{b.count}"
    step = b.rng.choice(["+", "-", "*", "^"]) if kind(x.dtype) == "int" else b.rng.choice(["+", "-", "*"])
    b.lines += [
        f"{acc} = {x.name}",
        f"for i in range({trips}):",
        f"    {acc} = tl.where(({y.name} + i) % 2 == 0, {acc} {step} {x.name}, {acc}).to(tl.{x.dtype})",
    ]
    value = Value(acc, x.dtype)
    b.values.append(value)
    return value


def _while(b: Builder) -> Value | None:
    """A ``while`` loop whose trip count depends on ``n`` (0 to 3 trips at run time)."""
    x = b.pick(("int", "float"), exact_only=True)
    if x is None:
        return None
    b.features.add("while")
    b.count += 1
    acc, j = f"v{b.count}", f"j{b.count}"
    step = b.rng.choice(["+", "-", "*"])
    b.lines += [
        f"{acc} = {x.name}",
        f"{j} = 0",
        f"while {j} < n % 4:",
        f"    {acc} = ({acc} {step} {x.name}).to(tl.{x.dtype})",
        f"    {j} += 1",
    ]
    value = Value(acc, x.dtype)
    b.values.append(value)
    return value


def _outer(b: Builder) -> Value | None:
    """A row ``[1, C]`` and a column ``[R, 1]`` broadcast against each other (2-D tiles only)."""
    if len(b.shape) != 2:
        return None
    x, y = b.pick(("int", "float"), exact_only=True), b.pick(("int", "float"), exact_only=True)
    if x is None or y is None:
        return None
    b.features.add("outer")
    op = b.rng.choice(["+", "-", "*"])
    row, col = f"tl.max({x.name}, axis=0)[None, :]", f"tl.min({y.name}, axis=1)[:, None]"
    return b.define(f"{row} {op} {col}", promote(x.dtype, y.dtype))


def _branch(b: Builder) -> Value | None:
    x, y = b.pick(exact_only=True), b.pick(exact_only=True)
    if x is None:
        return None
    b.features.add("if")
    dtype = promote(x.dtype, y.dtype) if kind(x.dtype) != "bool" or kind(y.dtype) != "bool" else "int1"
    b.count += 1
    out = f"v{b.count}"
    cond = b.rng.choice(["tl.program_id(0) % 2 == 0", "n > 20", "n % 3 == 1"])
    b.lines += [
        f"if {cond}:",
        f"    {out} = {x.name}.to(tl.{dtype})",
        "else:",
        f"    {out} = {y.name}.to(tl.{dtype})",
    ]
    value = Value(out, dtype)
    b.values.append(value)
    return value


#: each step with its weight (how often it is drawn)
STEPS = [(_binary, 8), (_unary, 6), (_reduction, 2), (_loop, 1), (_while, 1), (_outer, 1), (_branch, 1)]
STEPS.append((_approximate, 1))


def _dot(b: Builder) -> Value | None:
    """``tl.dot`` of two values cast to i8 (i32, exact) or to f16 (an f32 or, with ``out_dtype``, an f16 result),
    or of f32 values in ``tf32x3`` or ``ieee`` (f32 sums): floats approximate."""
    if b.shape != (16, 16):
        return None
    x, y = b.pick(exact_only=True), b.pick(exact_only=True)
    b.features.add("dot")
    kind = b.rng.random()
    if kind < 0.4:
        return b.define(f"tl.dot({x.name}.to(tl.int8), {y.name}.to(tl.int8))", "int32")
    if kind < 0.7:
        return b.define(f"tl.dot({x.name}.to(tl.float16), {y.name}.to(tl.float16))", "float32", exact=False)
    if kind < 0.85:
        f16 = f"tl.dot({x.name}.to(tl.float16), {y.name}.to(tl.float16), out_dtype=tl.float16)"
        return b.define(f16, "float16", exact=False)
    precision = b.rng.choice(("tf32x3", "ieee"))
    # tf32x3 keeps tf32's exponent range: inputs below 2^-136 (bit patterns of small integers) count as zero
    x32, y32 = (f"tl.where(tl.abs({v.name}.to(tl.float32)) < 1e-37, 0.0, {v.name}.to(tl.float32))" for v in (x, y))
    f32 = f'tl.dot({x32}, {y32}, input_precision="{precision}")'
    return b.define(f32, "float32", exact=False)


STEPS.append((_dot, 1))


def _gather(b: Builder) -> Value | None:
    """``tl.gather`` of any value along one axis, by an integer value masked into the extent there."""
    x, y = b.pick(exact_only=True), b.pick(("int",), exact_only=True)
    if x is None or y is None:
        return None
    axis = b.rng.randrange(len(b.shape))
    b.features.add("gather")
    index = f"{y.name}.to(tl.int32) & {b.shape[axis] - 1}"
    return b.define(f"tl.gather({x.name}, {index}, {axis})", x.dtype, x.exact, x.rtol)


STEPS.append((_gather, 1))


def _histogram(b: Builder) -> Value | None:
    """``tl.histogram`` of an integer value of a 1-d tile (values of every size: many fall outside the bins),
    into as many bins as the tile has elements, sometimes under a boolean value as its mask: exact counts."""
    x = b.pick(("int",), exact_only=True)
    if len(b.shape) != 1 or x is None:
        return None
    b.features.add("histogram")
    keep = b.pick(("bool",), exact_only=True)
    mask = f", mask={keep.name}" if keep is not None and b.rng.random() < 0.5 else ""
    return b.define(f"tl.histogram({x.name}, {b.shape[0]}{mask})", "int32")


STEPS.append((_histogram, 1))


def random_array(rng: np.random.Generator, dtype: str, size: int) -> np.ndarray:
    """Values that reach the edges: small and full-range integers; floats of many scales, zeros, infinities."""
    if dtype == "int1":
        return rng.random(size) < 0.5
    if kind(dtype) == "int":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
        small = rng.integers(max(info.min, -10), 11, size=size).astype(dtype)
        return np.where(rng.random(size) < 0.5, small, wide)
    scale = 10.0 ** rng.integers(-3, 4, size=size)
    values = rng.standard_normal(size) * scale
    special = rng.choice([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5], size=size)
    values = np.where(rng.random(size) < 0.05, special, values)
    return values.astype(numpy_dtype(dtype))


def generate(seed: int) -> Program:
    """The random program (and inputs) of ``seed``."""
    rng = random.Random(seed)
    shape = rng.choice(
        [(rng.choice([16, 32, 64, 128]),), (rng.choice([2, 4, 8, 16]), rng.choice([2, 4, 8, 16])), (16, 16)]
    )
    size = int(np.prod(shape))
    grid = rng.randint(1, 3)
    n = grid * size - rng.choice([0, 0, 1, size // 2, size - 1])
    b = Builder(rng, shape)
    inputs = {}
    for i in range(rng.randint(1, 3)):
        dtype = rng.choice(DTYPES)
        inputs[f"x{i}"] = dtype
        other = rng.choice(["0", "1"]) if dtype != "int1" else "0"
        b.values.append(Value(f"a{i}", dtype))
        b.lines.append(f"a{i} = tl.load(x{i} + offs, mask=mask, other={other})")
    steps = [step for step, weight in STEPS for _ in range(weight)]
    for _ in range(rng.randint(2, 8)):
        for _attempt in range(10):
            if rng.choice(steps)(b) is not None:
                break
    outputs, stores = _stores(b, rng)
    return _assemble(seed, b, shape, grid, n, inputs, outputs, stores)


def _stores(b: Builder, rng: random.Random):
    """Store the last value (and maybe another), maybe through an atomic."""
    outputs, stores = {}, []
    chosen = [b.values[-1]] + ([rng.choice(b.values)] if rng.random() < 0.3 else [])
    for i, v in enumerate(chosen):
        outputs[f"out{i}"] = (v.dtype, None, v.exact, v.rtol)
        stores.append(f"tl.store(out{i} + offs, {v.name}, mask=mask)")
    ints = [v for v in b.values if kind(v.dtype) == "int" and v.exact]
    if ints and rng.random() < 0.25:
        v = rng.choice(ints)
        fn = rng.choice(["atomic_add", "atomic_max", "atomic_min", "atomic_xor", "atomic_or", "atomic_and"])
        b.features.add(fn)
        outputs["acc"] = ("int32", 4, True, 0.0)
        stores.append(f"tl.{fn}(acc + offs % 4, {v.name}.to(tl.int32), mask=mask)")
    return outputs, stores


def _assemble(seed, b: Builder, shape, grid, n, inputs, outputs, stores) -> Program:
    params = [*inputs, *outputs, "n"]
    size = int(np.prod(shape))
    if len(shape) == 1:
        offs = "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)"
    else:
        r, c = shape
        offs = f"offs = tl.program_id(0) * BLOCK + tl.arange(0, {r})[:, None] * {c} + tl.arange(0, {c})[None, :]"
    body = [offs, "mask = offs < n", *b.lines, *stores]
    source = "\n".join(
        ["@tilelab.jit", f"def kernel({', '.join(params)}, BLOCK: tl.constexpr):"] + [f"    {line}" for line in body]
    )
    data = np.random.default_rng(seed)
    arrays = {name: random_array(data, dtype, grid * size) for name, dtype in inputs.items()}
    outs = {name: (numpy_dtype(d), count or grid * size, *rest) for name, (d, count, *rest) in outputs.items()}
    return Program(seed, source + "\n", shape, grid, n, arrays, outs, b.features)
