"""Layouts as linear maps over GF(2): the one type behind every GPU layout.

A layout says where each element of a tile lives: which register of which lane
of which warp (a *distributed* layout), or at which offset of a shared-memory
buffer (a *shared* layout). Because every size is a power of two, an index is a
vector of bits, and every layout the compiler uses is *linear over GF(2)*: the
image of an index is the XOR of the images of its set bits. So a layout is
stored as, per input dimension, the list of its *basis vectors* (the tensor
coordinates of input bit 0, bit 1, ...), and everything else follows from XOR:

    register=[[0,1],[0,2]], lane=[[0,4],[1,0],...], warp=[...]
    element of (register=3, lane=1) = [0,1] ^ [0,2] ^ [0,4] = [0,7]

Input dims are named ``register``, ``lane``, ``warp`` (or ``offset`` for shared
memory); output dims are ``dim0``, ``dim1``, ... (row-major: the last is fastest).
A zero basis vector means *broadcast*: two lanes that differ in that bit hold the
same element. Composition, inversion and the questions the backend asks (vector
width, conversion kind, bank conflicts) are then small exercises in linear
algebra (see "Linear Layouts", Zhou et al., 2025).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .gf2 import XorBasis

#: Input dims of distributed layouts, minor to major.
REGISTER, LANE, WARP, OFFSET = "register", "lane", "warp", "offset"


def log2_exact(n: int, what: str = "size") -> int:
    """``log2(n)`` for a power of two ``n``; raises ``ValueError`` otherwise."""
    n = int(n)
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1


def _out_dims(out_dims) -> tuple[tuple[str, int], ...]:
    if isinstance(out_dims, Mapping):
        items = list(out_dims.items())
    else:
        items = [(f"dim{i}", int(s)) for i, s in enumerate(out_dims)]
    for name, size in items:
        log2_exact(size, f"size of {name}")
    return tuple((str(n), int(s)) for n, s in items)


class LinearLayout:
    """A linear map over GF(2) from hardware index bits to tensor index bits.

    ``bases`` maps each input dim to its basis vectors (one coordinate per output
    dim); ``out_dims`` is a shape (dims named ``dim0``...) or a ``{name: size}`` map.

        >>> L = LinearLayout({"register": [[1]], "lane": [[2], [4]]}, [8])
        >>> L.apply(register=1, lane=3).tolist()
        [7]

    ``name`` is how the layout prints in IR text (``#blocked<...>``); ``params``
    keeps the constructor's arguments. Neither takes part in equality: two layouts
    are equal when they are the same map.
    """

    def __init__(self, bases: Mapping[str, Sequence[Sequence[int]]], out_dims, name=None, params=None):
        self.out_dims = _out_dims(out_dims)
        rank = len(self.out_dims)
        self.bases: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...] = tuple(
            (str(d), tuple(tuple(int(c) for c in v) for v in vs)) for d, vs in bases.items()
        )
        for d, vs in self.bases:
            for v in vs:
                if len(v) != rank or any(not 0 <= c < s for c, (_, s) in zip(v, self.out_dims)):
                    raise ValueError(f"basis vector {list(v)} of {d} does not fit shape {list(self.shape)}")
        self.name = name
        self.params = dict(params or {})

    # ------------------------------------------------------------------ shape

    @property
    def in_dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.bases)

    def in_bases(self, in_dim: str) -> tuple[tuple[int, ...], ...]:
        """The basis vectors of ``in_dim`` (empty when the layout has no such dim)."""
        return dict(self.bases).get(in_dim, ())

    def in_size(self, in_dim: str) -> int:
        return 1 << len(self.in_bases(in_dim))

    @property
    def out_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.out_dims)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s for _, s in self.out_dims)

    @property
    def rank(self) -> int:
        return len(self.out_dims)

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    # ------------------------------------------------------------------ flat bit vectors

    def _shifts(self) -> list[int]:
        """Bit position of each output dim in the flat (row-major) element index (kept: layouts never change)."""
        shifts = self.__dict__.get("_shift_list")
        if shifts is None:
            shifts, acc = [], 0
            for _, size in reversed(self.out_dims):
                shifts.append(acc)
                acc += log2_exact(size)
            shifts = self.__dict__["_shift_list"] = shifts[::-1]
        return shifts

    def flatten(self, vector: Sequence[int]) -> int:
        """The row-major linear index of a coordinate vector (a bit vector over GF(2))."""
        return sum(int(c) << s for c, s in zip(vector, self._shifts()))

    def unflatten(self, flat: int) -> tuple[int, ...]:
        return tuple((flat >> s) & (size - 1) for s, (_, size) in zip(self._shifts(), self.out_dims))

    def flat_bases(self) -> list[int]:
        """Every basis vector, input dims in order, flattened to an int."""
        return [self.flatten(v) for _, vs in self.bases for v in vs]

    # ------------------------------------------------------------------ evaluation

    def apply(self, **indices) -> np.ndarray:
        """Tensor coordinates of hardware indices: arrays broadcast, result ``(..., rank)``.

        Missing input dims count as 0: ``L.apply(lane=np.arange(32))`` gives the
        elements of register 0 of warp 0 for every lane.
        """
        flat = self.apply_flat(**indices)
        out = np.empty((*flat.shape, self.rank), dtype=np.int64)
        for i, (shift, (_, size)) in enumerate(zip(self._shifts(), self.out_dims)):
            out[..., i] = (flat >> shift) & (size - 1)
        return out

    def apply_flat(self, **indices) -> np.ndarray:
        """``apply``'s elements as row-major indices (``flatten`` of each): what gathers compare, in one array."""
        unknown = set(indices) - set(self.in_dims)
        if unknown:
            raise ValueError(f"layout has no input dim {sorted(unknown)}; it has {list(self.in_dims)}")
        arrays = {d: np.asarray(v, dtype=np.int64) for d, v in indices.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
        flat = np.zeros(shape, dtype=np.int64)
        for d, idx in arrays.items():
            table = self._flat_table(d)
            flat ^= table[idx & (len(table) - 1)]  # bits past the dim's size select nothing, as a map of bits
        return flat

    def holders(self) -> np.ndarray:
        """``holders()[e]``: the hardware index (one column per input dim) holding row-major element ``e``.

        ``pseudo_invert`` applied to every element once and kept (broadcast copies: the lowest index), so
        that "which register holds each of these elements" is one lookup per element.
        """
        table = self.__dict__.get("_holders")
        if table is None:
            flat = np.arange(self.num_elements, dtype=np.int64)
            coords = {n: (flat >> s) & (size - 1) for s, (n, size) in zip(self._shifts(), self.out_dims)}
            table = self.__dict__["_holders"] = self.pseudo_invert().apply(**coords)
        return table

    def _flat_table(self, in_dim: str) -> np.ndarray:
        """``table[i]``: the flat (row-major) element index of input index ``i`` of ``in_dim``, all ``i`` at once.

        Built by doubling: the entries with bit ``b`` set are the ones without it XOR basis ``b``.
        Kept on the layout (a layout never changes), so a lowering that asks the same layout
        thousands of questions builds it once.
        """
        tables = self.__dict__.setdefault("_flat_tables", {})
        table = tables.get(in_dim)
        if table is None:
            table = np.zeros(1, dtype=np.int64)
            for v in self.in_bases(in_dim):
                table = np.concatenate([table, table ^ self.flatten(v)])
            tables[in_dim] = table
        return table

    def coords(self) -> np.ndarray:
        """The whole map as a table: major input dim first, e.g. ``[warp, lane, register, rank]``."""
        dims = self.in_dims[::-1]
        grids = np.meshgrid(*(np.arange(self.in_size(d)) for d in dims), indexing="ij")
        return self.apply(**dict(zip(dims, grids)))

    def preimage(self, coords) -> dict[str, np.ndarray]:
        """One hardware index per element: ``coords`` is ``(..., rank)``; gives ``{in_dim: array}``.

        Where several indices hold an element (broadcast), the one with the lowest
        bits wins (lane 0 before lane 16). Raises ``ValueError`` for elements the
        layout does not cover.
        """
        coords = np.asarray(coords, dtype=np.int64)
        if coords.shape[-1:] != (self.rank,) or np.any(coords < 0) or np.any(coords >= np.asarray(self.shape)):
            raise ValueError(f"coordinates must be (..., {self.rank}) inside shape {list(self.shape)}")
        inv = self.pseudo_invert()
        found = inv.apply(**{n: coords[..., i] for i, n in enumerate(self.out_names)})
        result = {d: found[..., i] for i, d in enumerate(self.in_dims)}
        if not np.array_equal(self.apply(**result), coords):
            raise ValueError("some coordinates are not held by this layout")
        return result

    def owner_of(self, coords) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(warp, lane, register)`` holding each element of ``coords`` (``(..., rank)``)."""
        pre = self.preimage(coords)
        zero = np.zeros(np.shape(coords)[:-1], dtype=np.int64)
        return pre.get(WARP, zero), pre.get(LANE, zero), pre.get(REGISTER, zero)

    # ------------------------------------------------------------------ algebra

    def is_surjective(self) -> bool:
        """Every element of the shape is held somewhere."""
        basis = XorBasis()
        for v in self.flat_bases():
            basis.insert(v)
        return basis.rank == sum(log2_exact(s) for s in self.shape)

    def is_injective(self) -> bool:
        """No two hardware indices hold the same element (no broadcast)."""
        basis = XorBasis()
        return all(basis.insert(v) for v in self.flat_bases())

    def is_invertible(self) -> bool:
        return self.is_surjective() and self.is_injective()

    def pseudo_invert(self) -> LinearLayout:
        """A right inverse ``R`` (``self(R(x)) == x``) of a surjective layout.

        Its input dims are this layout's output dims and its outputs this layout's
        input dims: it answers "who holds element x". Broadcast copies resolve to
        the lowest hardware index.
        """
        basis = XorBasis()
        for i, v in enumerate(self.flat_bases()):
            basis.insert(v, 1 << i)
        out_dims = {d: 1 << len(vs) for d, vs in self.bases}
        new_bases = {}
        for name, shift, size in zip(self.out_names, self._shifts(), self.shape):
            vectors = []
            for bit in range(log2_exact(size)):
                tag = basis.solve(1 << (shift + bit))
                if tag is None:
                    raise ValueError(f"layout is not surjective: nothing holds bit {bit} of {name}")
                vectors.append(self._split_tag(tag))
            new_bases[name] = vectors
        return LinearLayout(new_bases, out_dims)

    def _split_tag(self, tag: int) -> list[int]:
        """A combination of input bits (one int) as an index per input dim."""
        out, offset = [], 0
        for _, vs in self.bases:
            out.append((tag >> offset) & ((1 << len(vs)) - 1))
            offset += len(vs)
        return out

    def invert(self) -> LinearLayout:
        """The inverse map of a bijective layout (element -> hardware index)."""
        if not self.is_invertible():
            raise ValueError("layout is not invertible (it broadcasts or leaves elements out)")
        return self.pseudo_invert()

    def compose(self, outer: LinearLayout) -> LinearLayout:
        """``outer`` after ``self``: ``x -> outer(self(x))`` (Triton's ``L1.compose(L2)``).

        ``self``'s output dims must be ``outer``'s input dims, with the same sizes.
        """
        if self.out_dims != tuple((d, outer.in_size(d)) for d, _ in self.out_dims):
            raise ValueError(f"cannot compose: outputs {self.out_dims} are not the inputs of {outer.in_dims}")
        # over GF(2) in plain ints: each coordinate bit of ``v`` selects one of outer's flat bases
        outer_flat = {d: [outer.flatten(u) for u in vs] for d, vs in outer.bases}
        new_bases = {}
        for d, vs in self.bases:
            rows = []
            for v in vs:
                flat = 0
                for name, c in zip(self.out_names, v):
                    for bit, basis in enumerate(outer_flat.get(name, ())):
                        if (c >> bit) & 1:
                            flat ^= basis
                rows.append(list(outer.unflatten(flat)))
            new_bases[d] = rows
        return LinearLayout(new_bases, dict(outer.out_dims))

    def invert_and_compose(self, other: LinearLayout) -> LinearLayout:
        """The map ``C`` from ``self``'s inputs to ``other``'s with ``other(C(x)) == self(x)``.

        For a layout conversion ``self -> other`` it says, for each source register,
        lane and warp, where the same element lives in the destination.
        """
        if self.out_dims != other.out_dims:
            raise ValueError(f"layouts of different shapes: {list(self.shape)} and {list(other.shape)}")
        return self.compose(other.pseudo_invert())

    def with_bases(self, in_dim: str, vectors) -> LinearLayout:
        """A copy with ``in_dim``'s basis vectors replaced (the name is dropped)."""
        bases = {d: vs for d, vs in self.bases}
        bases[in_dim] = vectors
        return LinearLayout(bases, dict(self.out_dims))

    def named(self, name: str, **params) -> LinearLayout:
        """The same map, printed as ``name`` and remembering ``params``."""
        return LinearLayout(dict(self.bases), dict(self.out_dims), name=name, params=params)

    # ------------------------------------------------------------------ identity and text

    def __eq__(self, other) -> bool:
        return isinstance(other, LinearLayout) and self.bases == other.bases and self.out_dims == other.out_dims

    def __hash__(self) -> int:
        return hash((self.bases, self.out_dims))

    def to_text(self) -> str:
        """The full map: ``#linear<register=[[0,1]], lane=[...], shape=[16,16]>``."""
        parts = [f"{d}={_vecs(vs)}" for d, vs in self.bases]
        if self.out_names == tuple(f"dim{i}" for i in range(self.rank)):
            parts.append(f"shape={_vec(self.shape)}")
        else:
            parts.append("out=[" + ",".join(f"{n}:{s}" for n, s in self.out_dims) + "]")
        return "#linear<" + ", ".join(parts) + ">"

    def __str__(self) -> str:
        return self.name or self.to_text()

    def __repr__(self) -> str:
        return f"LinearLayout({self.to_text()})"


def _vec(v) -> str:
    return "[" + ",".join(str(c) for c in v) + "]"


def _vecs(vs) -> str:
    return "[" + ",".join(_vec(v) for v in vs) + "]"
