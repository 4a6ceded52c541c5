"""The operations of the tile IR, one module per family.

Each op is a small class: its printed ``name``, its operands and attributes, its
``traits`` (``Pure``, ``Elementwise``, ``Terminator``, memory effects...: see
``traits.py``), which the passes query instead of listing op classes, and ``_verify``:
the rules it states in its docstring, checked by ``Op.verify`` (the verifier calls it on
every op). Result types are decided by the frontend's semantic layer (type promotion and
broadcasting live there, in one place) and handed to the constructor; ops do not
re-derive them.

Import ops from this package, not from the family modules, so that moving an op
between families never breaks a caller::

    from tilelab.compiler.ir.ops import LoadOp, StoreOp

| family | module | ops |
|---|---|---|
| indexing | ``indexing`` | ConstantOp, ProgramIdOp, NumProgramsOp, MakeRangeOp |
| shape | ``shape`` | SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, JoinOp, SplitOp, CatOp, FlipOp, SortOp, |
| | | GatherOp |
| memory | ``memory`` | AddPtrOp, LoadOp, StoreOp, AtomicRMWOp, AtomicCASOp |
| elementwise | ``elementwise`` | BinaryOp, CmpOp, UnaryOp, FmaOp, SelectOp, CastOp, BitcastOp, HintOp |
| reductions | ``reductions`` | ReduceOp, ScanOp, ReduceReturnOp, HistogramOp, DotOp |
| control flow | ``control_flow`` | ForOp, IfOp, WhileOp, YieldOp, ConditionOp, CallOp, ReturnOp |
| debugging | ``debugging`` | PrintOp, AssertOp, BarrierOp |
| GPU layouts | ``gpu`` | ConvertLayoutOp |
| shared memory | ``gpu`` | LocalAllocOp, LocalStoreOp, LocalLoadOp, MemDescIndexOp, MemDescTransOp |
| async copies | ``gpu`` | AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, AsyncWaitOp |
| Hopper tensor cores | ``gpu`` | WarpGroupDotOp, WarpGroupDotWaitOp, FenceAsyncSharedOp |
| Hopper bulk copies | ``tma`` | TensorMapOp, AsyncTMACopyOp, AsyncTMAStoreOp, InitBarriersOp, InvalBarriersOp, |
| | | WaitBarrierOp |

``FuncOp`` lives in ``core.py`` (the IR's structure needs it) and is re-exported here.
"""

from __future__ import annotations

# The core and type names the ops are built from stay reachable as ``ops.Op``, ``ops.i32``, ...
from ..core import UNKNOWN_LOC, Block, FuncOp, Loc, Op, Region, Value  # noqa: F401
from ..types import Type, i1, i32  # noqa: F401
from .control_flow import CallOp, ConditionOp, ForOp, IfOp, ReturnOp, WhileOp, YieldOp
from .debugging import AssertOp, BarrierOp, PrintOp
from .elementwise import (
    BINARY_KINDS,
    CMP_PREDICATES,
    UNARY_KINDS,
    BinaryOp,
    BitcastOp,
    CastOp,
    CmpOp,
    FmaOp,
    HintOp,
    InlineAsmOp,
    SelectOp,
    UnaryOp,
)
from .gpu import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    ConvertLayoutOp,
    FenceAsyncSharedOp,
    LocalAllocOp,
    LocalLoadOp,
    LocalStoreOp,
    MemDescIndexOp,
    MemDescTransOp,
    WarpGroupDotOp,
    WarpGroupDotWaitOp,
)
from .indexing import ConstantOp, MakeRangeOp, NumProgramsOp, ProgramIdOp
from .memory import ATOMIC_KINDS, AddPtrOp, AtomicCASOp, AtomicRMWOp, LoadOp, StoreOp
from .reductions import DotOp, HistogramOp, ReduceOp, ReduceReturnOp, ScanOp
from .shape import (
    BroadcastOp,
    CatOp,
    ExpandDimsOp,
    FlipOp,
    GatherOp,
    JoinOp,
    ReshapeOp,
    SortOp,
    SplatOp,
    SplitOp,
    TransOp,
)
from .tma import AsyncTMACopyOp, AsyncTMAStoreOp, InitBarriersOp, InvalBarriersOp, TensorMapOp, WaitBarrierOp

__all__ = [
    "FuncOp",
    "ConstantOp",
    "ProgramIdOp",
    "NumProgramsOp",
    "MakeRangeOp",
    "SplatOp",
    "BroadcastOp",
    "ExpandDimsOp",
    "ReshapeOp",
    "TransOp",
    "JoinOp",
    "SplitOp",
    "CatOp",
    "FlipOp",
    "SortOp",
    "GatherOp",
    "AddPtrOp",
    "LoadOp",
    "StoreOp",
    "AtomicRMWOp",
    "AtomicCASOp",
    "BinaryOp",
    "CmpOp",
    "UnaryOp",
    "FmaOp",
    "SelectOp",
    "CastOp",
    "BitcastOp",
    "HintOp",
    "InlineAsmOp",
    "ReduceOp",
    "ScanOp",
    "HistogramOp",
    "ReduceReturnOp",
    "DotOp",
    "ForOp",
    "IfOp",
    "WhileOp",
    "YieldOp",
    "ConditionOp",
    "CallOp",
    "ReturnOp",
    "PrintOp",
    "AssertOp",
    "BarrierOp",
    "ConvertLayoutOp",
    "LocalAllocOp",
    "LocalStoreOp",
    "LocalLoadOp",
    "MemDescIndexOp",
    "MemDescTransOp",
    "AsyncCopyGlobalToLocalOp",
    "AsyncCommitGroupOp",
    "AsyncWaitOp",
    "WarpGroupDotOp",
    "WarpGroupDotWaitOp",
    "FenceAsyncSharedOp",
    "TensorMapOp",
    "AsyncTMACopyOp",
    "AsyncTMAStoreOp",
    "InitBarriersOp",
    "InvalBarriersOp",
    "WaitBarrierOp",
    "BINARY_KINDS",
    "UNARY_KINDS",
    "CMP_PREDICATES",
    "ATOMIC_KINDS",
]
