"""Give the operands of every tensor-core dot the ``mma.sync m16n8k16`` fragment layouts.

Why: ``mma.sync`` reads its A and B operands from registers in a fixed pattern (the
*dot-operand* layouts of the accumulator's mma layout: lane ``t`` holds rows ``t//4``
and ``t//4 + 8`` of A, ...). A loaded tile has a blocked layout made for coalesced
loads, so each operand needs one conversion; as an explicit ``ttg.convert_layout``
it is visible in the IR (and in the shared-memory view), and the backend's dot finds
its fragments already in place. The conversion sits right before the dot: placed
after the operand's definition instead, attention's ``q`` would stay converted across
the loop, and ptxas spilled more there than converting it again at every iteration.

The accumulator's mma layout itself is chosen by ``assign-layouts`` (it propagates
backward to the ``tl.zeros`` and the loop-carried accumulator); this pass only
touches dots whose accumulator already has one.

before::

    %a = tt.load %pa : tensor<64x32xf16, #blocked>
    scf.for ... {
      %b = tt.load %pb : tensor<32x64xf16, #blocked>
      %d = tt.dot %a, %b, %c : ... -> tensor<64x64xf32, #mma>
    }

after::

    %a = tt.load %pa : tensor<64x32xf16, #blocked>
    scf.for ... {
      %b = tt.load %pb : tensor<32x64xf16, #blocked>
      %a1 = ttg.convert_layout %a : tensor<64x32xf16, #dot_op<0, #mma>>
      %b1 = ttg.convert_layout %b : tensor<32x64xf16, #dot_op<1, #mma>>
      %d = tt.dot %a1, %b1, %c : ... -> tensor<64x64xf32, #mma>
    }
"""

from __future__ import annotations

from tilelab.compiler.ir.core import Module
from tilelab.compiler.ir.ops import ConvertLayoutOp, DotOp
from tilelab.compiler.layouts import LinearLayout, dot_operand

NAME = "accelerate-dot"


def operand_layouts(op: DotOp) -> tuple[LinearLayout, LinearLayout] | None:
    """The A and B fragment layouts ``op`` needs, or None when its accumulator is not an mma layout."""
    acc = op.operands[2].type.layout
    if acc is None or acc.params.get("kind") != "mma":
        return None
    k = op.operands[0].type.shape[-1]
    return dot_operand(acc, 0, k=k), dot_operand(acc, 1, k=k)


def insert_conversion(dot: DotOp, v, layout: LinearLayout):
    """A ``convert_layout`` of ``v`` to ``layout``, inserted right before ``dot``."""
    conv = ConvertLayoutOp(v, v.type.with_layout(layout), loc=dot.loc)
    dot.parent.insert(dot.parent.ops.index(dot), conv)
    return conv.result


def run(module: Module) -> bool:
    """Convert each mma dot's A and B operands to their fragment layouts."""
    changed = False
    for op in [op for op in module.walk() if isinstance(op, DotOp)]:
        wanted = operand_layouts(op)
        if wanted is None:
            continue
        for index, layout in enumerate(wanted):
            v = op.operands[index]
            if v.type.layout == layout:
                continue
            op.operands[index] = insert_conversion(op, v, layout)
            changed = True
    return changed
