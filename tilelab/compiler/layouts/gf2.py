"""Linear algebra over GF(2) on bit vectors held in Python ints.

Over GF(2) addition is XOR, so a vector of bits fits in one int and a linear
combination is an XOR of some vectors. Layouts need three questions answered:
is a vector in the span of others, which combination produces it, and how many
independent vectors a set holds (its rank). ``XorBasis`` answers all three by
Gaussian elimination on the highest set bit:

    >>> b = XorBasis()
    >>> b.insert(0b011, tag=0b01), b.insert(0b110, tag=0b10), b.insert(0b101, tag=0b11)
    (True, True, False)
    >>> b.solve(0b101)   # 0b101 = 0b011 ^ 0b110: inputs 0 and 1 (tags 0b01 ^ 0b10)
    3
"""

from __future__ import annotations


class XorBasis:
    """A reduced set of independent bit vectors, each remembering how it was made.

    ``tag`` is the combination of original inputs (one bit per input) that XORs to
    the stored vector; ``solve`` returns the tag of any vector in the span.
    """

    def __init__(self):
        self._rows: dict[int, tuple[int, int]] = {}  # highest bit -> (vector, tag)

    def reduce(self, vector: int, tag: int = 0) -> tuple[int, int]:
        """Eliminate ``vector`` against the basis: ``(residual, tag of what was XORed in)``."""
        while vector:
            top = vector.bit_length() - 1
            row = self._rows.get(top)
            if row is None:
                break
            vector ^= row[0]
            tag ^= row[1]
        return vector, tag

    def insert(self, vector: int, tag: int = 0) -> bool:
        """Add ``vector`` (made by the inputs in ``tag``); False when it was already in the span."""
        residual, tag = self.reduce(vector, tag)
        if residual == 0:
            return False
        self._rows[residual.bit_length() - 1] = (residual, tag)
        return True

    def contains(self, vector: int) -> bool:
        return self.reduce(vector)[0] == 0

    def solve(self, vector: int) -> int | None:
        """The tag of a combination of inserted vectors equal to ``vector``, or None."""
        residual, tag = self.reduce(vector)
        return tag if residual == 0 else None

    @property
    def rank(self) -> int:
        return len(self._rows)


def span_of(vectors) -> XorBasis:
    """An ``XorBasis`` of ``vectors``, input ``i`` tagged with bit ``i``."""
    basis = XorBasis()
    for i, v in enumerate(vectors):
        basis.insert(v, 1 << i)
    return basis


def rank(vectors) -> int:
    """The number of linearly independent vectors among ``vectors``."""
    return span_of(vectors).rank
