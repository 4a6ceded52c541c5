"""A tiny numpy evaluator of integer index math, to check axis facts on real values."""

import numpy as np

from tilelab.compiler import ir

_BIN = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": lambda a, b: np.trunc(a / b).astype(np.int64),
    "rem": np.fmod,
    "shl": np.left_shift,
    "shr": np.right_shift,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "min": np.minimum,
    "max": np.maximum,
}
_CMP = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def evaluate(module, args, pid=0):
    """Values of every integer SSA value for one program: pointer args are byte addresses."""
    env = dict(zip(module.kernel.args, [np.int64(a) for a in args]))
    for op in module.kernel.body.ops:
        val = _eval(op, env, pid)
        if val is not None:
            env[op.result] = val
    return env


def _eval(op, env, pid):
    get = [env.get(v) for v in op.operands]
    shape = op.results[0].type.shape if op.results else ()
    if isinstance(op, ir.ConstantOp):
        return np.full(shape, int(op.value), dtype=np.int64)
    if isinstance(op, ir.ProgramIdOp):
        return np.int64(pid)
    if isinstance(op, ir.MakeRangeOp):
        return np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int64)
    if isinstance(op, (ir.SplatOp, ir.BroadcastOp)):
        return np.broadcast_to(get[0], shape).copy()
    if isinstance(op, ir.ExpandDimsOp):
        return np.expand_dims(get[0], op.attrs["axis"])
    if isinstance(op, ir.HintOp):
        return get[0]
    if isinstance(op, ir.BinaryOp):
        return _BIN[op.kind](get[0], get[1]).astype(np.int64)
    if isinstance(op, ir.CmpOp):
        return _CMP[op.predicate](get[0], get[1]).astype(np.int64)
    if isinstance(op, ir.SelectOp):
        return np.where(get[0] != 0, get[1], get[2])
    if isinstance(op, ir.AddPtrOp):
        return get[0] + get[1] * op.operands[0].type.element.pointee.itemsize
    return None


def runs(values, axis, length):
    """``values`` moved so that ``axis`` is last and split into runs of ``length``: ``[..., runs, length]``."""
    v = np.moveaxis(np.asarray(values), axis, -1)
    return v.reshape(*v.shape[:-1], v.shape[-1] // length, length)


def check_facts(info, values, step=1):
    """Assert that contiguity, divisibility and constancy hold for the concrete ``values``.

    ``step``: the distance of consecutive values (the element size for pointers, in bytes).
    """
    values = np.atleast_1d(values)
    for d in range(values.ndim):
        c, dv, k = info.contiguity[d], info.divisibility[d], info.constancy[d]
        r = runs(values, d, c)
        assert np.all(np.diff(r, axis=-1) == step), f"contiguity {c} fails along dim {d}"
        assert np.all(r[..., 0] % dv == 0), f"divisibility {dv} fails along dim {d}"
        assert np.all(runs(values, d, k) == runs(values, d, k)[..., :1]), f"constancy {k} fails along dim {d}"
    if info.constant is not None:
        assert np.all(values == info.constant)
