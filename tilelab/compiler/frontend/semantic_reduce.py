"""Reductions, scans and dot products.

A reduction is a ``tt.reduce`` whose region combines two partial results; the region
is built by calling a combine function on the region's block arguments::

    tl.sum(x, 0)   ->  %r = tt.reduce %x {axis = 0} { ^bb(%a: f32, %b: f32): %c = arith.add %a, %b
                                                       tt.reduce.return %c }

``argmax`` is two such reductions: the max, then the least index holding it.
"""

from __future__ import annotations

from ..ir import ops
from ..ir import types as irt
from .errors import SemanticError
from .values import tensor, to_ir_type, unwrap

_SMALL_INT_SUM = {"i1": irt.i32, "i8": irt.i32, "i16": irt.i32, "u8": irt.u32, "u16": irt.u32}


class ReduceMixin:
    """Reductions, scans and ``dot`` for ``Semantic``."""

    # ------------------------------------------------------------------ generic
    def reduce(self, inputs: list[tensor], axis, combine, keep_dims=False) -> list[tensor]:
        """Reduce ``inputs`` along ``axis`` (all axes when None) with ``combine(lhs, rhs) -> values``."""
        inputs = [self.to_tensor(x) for x in inputs]
        if unwrap(axis) is None:
            inputs = [self.reshape(x, (x.type.numel,)) if len(x.type.shape) != 1 else x for x in inputs]
            axis = 0
        shape = list(inputs[0].type.shape)
        if not shape:
            raise SemanticError("cannot reduce a scalar")
        axis = self._axis(axis, len(shape), "reduce")
        out_shape = shape[:axis] + shape[axis + 1 :]
        rtypes = [irt.tensor(out_shape, x.type.element) for x in inputs]
        op = ops.ReduceOp([x.handle for x in inputs], axis, rtypes)
        self._build_combine(op, combine, len(inputs))
        self.builder.insert(op)
        results = [tensor(r, self) for r in op.results]
        if unwrap(keep_dims):
            results = [self.expand_dims(r, axis) for r in results]
        return results

    def _build_combine(self, op, combine, n: int) -> None:
        block = op.combine
        with self.builder.at_end(block):
            args = [tensor(a, self) for a in block.args]
            out = combine(args[:n], args[n:])
            out = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(out) != n:
                raise SemanticError(f"the combine function returned {len(out)} values for {n} inputs")
            out = [self.cast(self.to_tensor(v, block.args[i].type), block.args[i].type) for i, v in enumerate(out)]
            self.builder.insert(ops.ReduceReturnOp([v.handle for v in out]))

    def _user_combine(self, combine_fn):
        if self.inline_call is None:
            raise SemanticError("a combine function can only be used inside a kernel")
        return lambda lhs, rhs: self.inline_call(combine_fn, [*lhs, *rhs])

    def reduce_user(self, inputs, axis, combine_fn, keep_dims=False):
        """``tl.reduce(x, axis, combine_fn)`` with a ``@jit`` combine function."""
        single = isinstance(inputs, tensor)
        inputs = [inputs] if single else list(inputs)
        out = self.reduce(inputs, axis, self._user_combine(combine_fn), keep_dims)
        return out[0] if single else tuple(out)

    # ------------------------------------------------------------------ named reductions
    def sum(self, x, axis=None, keep_dims=False, dtype=None) -> tensor:
        """Sum along ``axis``; small ints accumulate in 32 bits, as in Triton."""
        x = self.to_tensor(x)
        target = to_ir_type(dtype) if unwrap(dtype) is not None else _SMALL_INT_SUM.get(x.type.element.name)
        if target is not None:
            x = self.cast(x, target)
        return self._binary_reduce(x, axis, "add", keep_dims)

    def _binary_reduce(self, x, axis, kind, keep_dims) -> tensor:
        def combine(lhs, rhs):
            return [self.emit(ops.BinaryOp(kind, lhs[0].handle, rhs[0].handle))]

        return self.reduce([x], axis, combine, keep_dims)[0]  # one binary op: LLVM folds the lane order away

    def max_reduce(
        self, x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False, kind="max"
    ):
        """``tl.max`` / ``tl.min``, optionally with the index of the extreme (lowest index on ties)."""
        x = self.to_tensor(x)
        if unwrap(return_indices):
            return self.argminmax(
                x, axis, kind, keep_dims, with_values=True, tie_break_left=return_indices_tie_break_left
            )
        if x.type.element.is_bool:
            x = self.cast(x, irt.i8)
        return self._binary_reduce(x, axis, kind, keep_dims)

    def argminmax(self, x, axis, kind="max", keep_dims=False, with_values=False, tie_break_left=True):
        """Index of the max (min) along ``axis``, like Triton: the lowest index of equal values.

        Two reductions of one binary op each: the extreme ``m`` (``tl.max`` / ``tl.min``), then the least
        index whose value equals ``m``. A combine of (value, index) pairs, as Triton builds it, costs a
        dozen instructions a step where each of these costs one (a GPU's reduction runs a step per element
        a thread holds and per shuffle), and the first reduction is the kernel's own ``tl.max(x, axis)``
        when it asks for that too (``cse`` merges equal reductions). ``tie_break_left=False`` lets any index
        of the extreme come back: this one gives the lowest anyway.

        NaN is ignored, as ``tl.max`` / ``tl.min`` ignore it and as Triton's compiled kernels do (its
        interpreter since Triton issue 10697): the index of the largest (smallest) number comes back, and
        of a row of NaNs, the first (``m`` is NaN only there). Each reduction is associative, so every
        target agrees whatever order it visits the elements in (a sequential loop on the CPU, a tree of
        shuffles on the GPU).
        """
        x = self.to_tensor(x)
        if unwrap(axis) is None:
            x = self.reshape(x, (x.type.numel,)) if len(x.type.shape) != 1 else x
            axis = 0
        axis = self._axis(axis, len(x.type.shape), f"arg{kind}")
        was_bool = x.type.element.is_bool
        if was_bool:
            x = self.cast(x, irt.i8)
        n = x.type.shape[axis]
        idx = self.arange(0, n)
        for _ in range(axis + 1, len(x.type.shape)):
            idx = self.expand_dims(idx, -1)
        extreme = self._binary_reduce(x, axis, kind, keep_dims=False)
        hit = self.compare("==", x, self.expand_dims(extreme, axis) if len(x.type.shape) > 1 else extreme)
        index = self._binary_reduce(self.where(hit, idx, n), axis, "min", keep_dims=False)
        if x.type.element.is_float:  # only a row of NaNs has a NaN extreme, and no element equal to it
            index = self.where(self.compare("!=", extreme, extreme), 0, index)
        if was_bool:
            extreme = self.cast(extreme, irt.i1)
        if unwrap(keep_dims):
            extreme, index = self.expand_dims(extreme, axis), self.expand_dims(index, axis)
        return (extreme, index) if with_values else index

    # ------------------------------------------------------------------ scans
    def scan(self, inputs: list[tensor], axis, combine, reverse=False) -> list[tensor]:
        """Inclusive scan of ``inputs`` along ``axis`` with ``combine``."""
        inputs = [self.to_tensor(x) for x in inputs]
        axis = self._axis(axis, len(inputs[0].type.shape), "scan")
        op = ops.ScanOp([x.handle for x in inputs], axis, bool(unwrap(reverse)))
        self._build_combine(op, combine, len(inputs))
        self.builder.insert(op)
        return [tensor(r, self) for r in op.results]

    def cumulative(self, x, axis=0, kind="add", reverse=False) -> tensor:
        """``cumsum`` / ``cumprod`` (small ints accumulate in 32 bits)."""
        x = self.to_tensor(x)
        target = _SMALL_INT_SUM.get(x.type.element.name)
        if target is not None:
            x = self.cast(x, target)

        def combine(lhs, rhs):
            return [self.emit(ops.BinaryOp(kind, lhs[0].handle, rhs[0].handle))]

        return self.scan([x], axis, combine, reverse)[0]

    def associative_scan(self, inputs, axis, combine_fn, reverse=False):
        single = isinstance(inputs, tensor)
        inputs = [inputs] if single else list(inputs)
        out = self.scan(inputs, axis, self._user_combine(combine_fn), reverse)
        return out[0] if single else tuple(out)

    # ------------------------------------------------------------------ dot
    def dot(self, a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=None):
        """``acc + a @ b`` on [M, K] x [K, N] tiles (a leading batch dimension allowed)."""
        a, b = self.to_tensor(a), self.to_tensor(b)
        sa, sb = list(a.type.shape), list(b.type.shape)
        if len(sa) not in (2, 3) or len(sa) != len(sb):
            raise SemanticError(f"dot needs two 2-d (or two 3-d) tensors, got shapes {sa} and {sb}")
        if sa[-1] != sb[-2] or sa[:-2] != sb[:-2]:
            raise SemanticError(f"dot: incompatible shapes {sa} and {sb} (inner dimensions must match)")
        ea, eb = a.type.element, b.type.element
        out = self._dot_out_type(ea, eb, out_dtype)
        shape = [*sa[:-1], sb[-1]]
        if unwrap(acc) is None:
            acc = self.constant(0, irt.tensor(shape, out))
        else:
            acc = self.to_tensor(acc)
            if list(acc.type.shape) != shape:
                raise SemanticError(f"dot: accumulator shape {list(acc.type.shape)} does not match result {shape}")
        precision = self._input_precision(ea, unwrap(input_precision), unwrap(allow_tf32))
        imprecise = int(unwrap(max_num_imprecise_acc) or 0)
        return self.emit(ops.DotOp(a.handle, b.handle, acc.handle, precision, imprecise))

    def _dot_out_type(self, ea, eb, out_dtype):
        fp8 = {"fp8e4nv", "fp8e5"}
        allowed = {"f16", "bf16", "f32", "i8", "f64"} | fp8
        if ea.name not in allowed or eb.name not in allowed:
            raise SemanticError(
                f"dot does not support {ea} and {eb} inputs (use f16, bf16, f32, float8e4nv, float8e5 or int8)"
            )
        if ea != eb and not (ea.name in fp8 and eb.name in fp8):
            raise SemanticError(f"dot needs operands of one dtype, got {ea} and {eb}")
        if ea.is_int:
            return irt.i32
        out = to_ir_type(out_dtype) if unwrap(out_dtype) is not None else irt.f32
        if ea.name == "f64":
            return irt.f64
        # Triton's rules: no bf16 result; f32 and bf16 operands always sum into f32 (out_dtype aside);
        # f16 and fp8 operands into f32 or f16
        if out.name == "bf16":
            raise SemanticError(
                "dot: out_dtype=bfloat16 is unsupported; use float32 or float16 and cast with .to(tl.bfloat16)"
            )
        if ea.name in ("f32", "bf16"):
            return irt.f32
        if out.name not in ("f32", "f16"):
            raise SemanticError(f"dot: out_dtype {out} is not allowed for {ea} inputs (float32 or float16)")
        return out

    def _input_precision(self, elem, precision, allow_tf32) -> str:
        if elem.name != "f32":
            return "ieee"
        if precision is None:
            precision = "ieee" if allow_tf32 is False else "tf32"
        if precision not in ("ieee", "tf32", "tf32x3"):
            raise SemanticError(f"input_precision must be 'ieee', 'tf32' or 'tf32x3', got {precision!r}")
        return precision
