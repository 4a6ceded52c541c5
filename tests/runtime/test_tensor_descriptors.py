"""Tensor descriptors: host ``TensorDescriptor`` arguments and ``tl.make_tensor_descriptor``, per target.

Values against numpy on random inputs whose shapes are not multiples of the block (the
descriptor's bounds checks decide every tail), strided arrays, descriptors handed to helper
functions, what a launch specializes, and the errors that name the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilelab
import tilelab.language as tl
from tilelab.compiler.frontend.descriptor_args import DescriptorArg
from tilelab.runtime.errors import LaunchError
from tilelab.tools.tensor_descriptor import TensorDescriptor

TARGETS = ["cpu", "interpret"]


@tilelab.jit
def _tile(a_desc, b_desc, off_m, off_n, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([off_m, k * BK]), b_desc.load([k * BK, off_n]), acc, input_precision="ieee")
    return acc


@tilelab.jit
def host_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B through three host descriptors; the loads happen in a helper function."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = _tile(a_desc, b_desc, pid_m * BM, pid_n * BN, K, BM, BN, BK)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@tilelab.jit
def device_matmul(a, b, c, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same product with descriptors built in the kernel from runtime strides."""
    a_desc = tl.make_tensor_descriptor(a, [M, K], [sam, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [K, N], [sbk, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c, [M, N], [scm, 1], [BM, BN])
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = _tile(a_desc, b_desc, pid_m * BM, pid_n * BN, K, BM, BN, BK)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@tilelab.jit
def shifted_copy(src_desc, dst_desc, dy, dx, BY: tl.constexpr, BX: tl.constexpr):
    """Block (i, j) of dst gets src's block at (i*BY + dy, j*BX + dx): reads past the edges get the padding."""
    i, j = tl.program_id(0), tl.program_id(1)
    dst_desc.store([i * BY, j * BX], src_desc.load([i * BY + dy, j * BX + dx]))


def padded(rng, rows, cols, dtype=np.float32, pitch=None):
    """A (rows, cols) view of a wider array: rows ``pitch`` elements apart (16-byte multiples)."""
    pitch = pitch or -(-cols // 16) * 16 + 16
    return rng.standard_normal((rows, pitch)).astype(dtype)[:, :cols]


def descriptors(a, b, c, BM, BN, BK):
    return (
        TensorDescriptor.from_tensor(a, [BM, BK]),
        TensorDescriptor.from_tensor(b, [BK, BN]),
        TensorDescriptor.from_tensor(c, [BM, BN]),
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("M", "N", "K"), [(70, 50, 45), (64, 32, 32)])
def test_host_descriptor_matmul(rng, target, M, N, K):
    a, b = padded(rng, M, K), padded(rng, K, N)
    c = np.full((M, -(-N // 16) * 16 + 16), -7.0, np.float32)[:, :N]
    BM, BN, BK = 32, 16, 16
    grid = (tilelab.cdiv(M, BM), tilelab.cdiv(N, BN))
    host_matmul[grid](*descriptors(a, b, c, BM, BN, BK), M, N, K, BM, BN, BK, target=target)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert (c.base[:, N:] == -7.0).all()  # the row padding past N is not written


@pytest.mark.parametrize("target", TARGETS)
def test_device_descriptor_matmul(rng, target):
    M, N, K = 45, 37, 29
    a, b, c = padded(rng, M, K), padded(rng, K, N), np.zeros((M, 48), np.float32)[:, :N]
    BM, BN, BK = 16, 16, 16
    grid = (tilelab.cdiv(M, BM), tilelab.cdiv(N, BN))
    strides = a.strides[0] // 4, b.strides[0] // 4, c.strides[0] // 4
    device_matmul[grid](a, b, c, M, N, K, *strides, BM, BN, BK, target=target)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize(("dy", "dx"), [(3, 5), (-2, -9)])
def test_out_of_bounds_reads_give_the_padding(rng, target, padding, dy, dx):
    rows, cols, BY, BX = 13, 21, 8, 8
    src = rng.standard_normal((rows, 32)).astype(np.float32)[:, :cols]
    dst = np.full((16, 32), 99.0, np.float32)[:, :24]  # whole blocks: every element is written
    src_desc = TensorDescriptor.from_tensor(src, [BY, BX], padding=padding)
    dst_desc = TensorDescriptor.from_tensor(dst, [BY, BX])
    shifted_copy[(2, 3)](src_desc, dst_desc, dy, dx, BY, BX, target=target)
    y, x = np.meshgrid(np.arange(16) + dy, np.arange(24) + dx, indexing="ij")
    inside = (y >= 0) & (y < rows) & (x >= 0) & (x < cols)
    fill = 0 if padding == "zero" else np.nan
    expected = np.where(inside, src[np.clip(y, 0, rows - 1), np.clip(x, 0, cols - 1)], fill)
    np.testing.assert_array_equal(dst, expected.astype(np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_stores_past_the_shape_are_dropped(rng, target):
    src = rng.standard_normal((16, 16)).astype(np.float32)
    dst = np.full((16, 16), 5.0, np.float32)
    src_desc = TensorDescriptor.from_tensor(src, [8, 8])
    dst_desc = TensorDescriptor(dst, [11, 13], [16, 1], [8, 8])  # a smaller array inside dst's memory
    shifted_copy[(2, 2)](src_desc, dst_desc, 0, 0, 8, 8, target=target)
    expected = np.full((16, 16), 5.0, np.float32)
    expected[:11, :13] = src[:11, :13]
    np.testing.assert_array_equal(dst, expected)


def test_a_launch_specializes_the_parts(rng, builds):
    """The last stride is the constant 1, shapes divisible by 16 are marked so; a new block shape compiles again."""
    kernel = tilelab.jit(host_matmul.fn)  # its own in-memory cache
    a, b, c = padded(rng, 64, 32), padded(rng, 32, 48), np.zeros((64, 48), np.float32)
    kernel[(4, 3)](*descriptors(a, b, c, 16, 16, 16), 64, 48, 32, 16, 16, 16, target="interpret")
    _, signature, constants, divisibility = builds[0]
    assert constants["a_desc"] == DescriptorArg((16, 16)) and constants["a_desc_stride1"] == 1
    assert signature["a_desc_base"] == "*f32" and "a_desc_stride1" not in signature
    assert divisibility["a_desc_shape0"] == 16 and divisibility["a_desc_base"] == 16
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

    a2, b2 = padded(rng, 64, 32), padded(rng, 32, 48)  # other arrays, same classes: no new compile
    kernel[(4, 3)](*descriptors(a2, b2, c, 16, 16, 16), 64, 48, 32, 16, 16, 16, target="interpret")
    assert len(builds) == 1
    np.testing.assert_allclose(c, a2 @ b2, rtol=1e-4, atol=1e-4)
    kernel[(2, 3)](*descriptors(a2, b2, c, 32, 16, 16), 64, 48, 32, 32, 16, 16, target="interpret")
    assert len(builds) == 2 and builds[1][2]["a_desc"] == DescriptorArg((32, 16))


def test_autotune_pre_hook_sets_the_block_shape(rng):
    """As in Triton's persistent matmul tutorial: each config's ``pre_hook`` sizes the descriptors' blocks."""

    def size_blocks(nargs):
        BM, BN, BK = nargs["BM"], nargs["BN"], nargs["BK"]
        nargs["a_desc"].block_shape = [BM, BK]
        nargs["b_desc"].block_shape = [BK, BN]
        nargs["c_desc"].block_shape = [BM, BN]

    configs = [tilelab.Config({"BM": bm, "BN": 16, "BK": 16}, pre_hook=size_blocks) for bm in (16, 32)]
    tuned = tilelab.autotune(configs, key=["M"], warmup=1, rep=1)(tilelab.jit(host_matmul.fn))
    M, N, K = 40, 24, 20
    a, b, c = padded(rng, M, K), padded(rng, K, N), np.zeros((M, 32), np.float32)[:, :N]
    descs = descriptors(a, b, c, 8, 8, 8)  # block shapes the hook replaces
    tuned[lambda meta: (tilelab.cdiv(M, meta["BM"]), tilelab.cdiv(N, meta["BN"]))](*descs, M, N, K, target="cpu")
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda a: TensorDescriptor(a[:, 1:], [8, 15], [16, 1], [8, 8]), "16-byte aligned"),
        (lambda a: TensorDescriptor(a, [16, 8], [1, 16], [8, 8]), "last dimension must be contiguous"),
        (lambda a: TensorDescriptor(a, [8, 8], [6, 1], [8, 8]), "multiples of 16 bytes"),
        (lambda a: TensorDescriptor(a, [16, 16], [16, 1], [8, 12]), "power of 2"),
        (lambda a: TensorDescriptor(a, [16, 16], [16, 1], [8, 2]), "at least 16 bytes"),
        (lambda a: TensorDescriptor(a, [16, 16], [16, 1], [8]), "one entry per dimension"),
        (lambda a: TensorDescriptor(a, [16, 0], [16, 1], [8, 8]), "shape must be positive"),
        (lambda a: TensorDescriptor(a, [16, 16], [16, 1], [8, 8], padding="one"), "padding"),
        (lambda a: TensorDescriptor(a.astype(np.int32), [16, 16], [16, 1], [8, 8], padding="nan"), "floating-point"),
        (lambda a: TensorDescriptor.from_tensor([[1.0]], [8, 8]), "needs an array"),
    ],
)
def test_bad_descriptors_are_refused_when_made(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make(np.zeros((16, 16), np.float32))


def test_a_descriptor_changed_after_it_was_made_is_checked_at_launch(rng):
    src, dst = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    src_desc, dst_desc = TensorDescriptor.from_tensor(src, [8, 8]), TensorDescriptor.from_tensor(dst, [8, 8])
    src_desc.block_shape = [8, 6]
    message = r"shifted_copy\(\): argument 'src_desc': block_shape\[1\] must be a power of 2"
    with pytest.raises(LaunchError, match=message):
        shifted_copy[(2, 2)](src_desc, dst_desc, 0, 0, 8, 8, target="cpu")


def test_triton_descriptors_are_accepted(rng):
    """Triton's own host class (over torch tensors) launches the same kernels."""
    torch = pytest.importorskip("torch")
    triton_descriptor = pytest.importorskip("triton.tools.tensor_descriptor")
    M, N, K = 33, 40, 24
    a, b = torch.from_numpy(padded(rng, M, K)), torch.from_numpy(padded(rng, K, N))
    c = torch.zeros((M, N), dtype=torch.float32)
    make = triton_descriptor.TensorDescriptor.from_tensor
    host_matmul[(3, 3)](make(a, [16, 16]), make(b, [16, 16]), make(c, [16, 16]), M, N, K, 16, 16, 16, target="cpu")
    np.testing.assert_allclose(c.numpy(), a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_host_descriptor_matmul_cuda(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    M, N, K = 500, 312, 200  # row strides of 16-byte multiples, as descriptors need
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    BM, BN, BK = 128, 64, 32
    grid = (tilelab.cdiv(M, BM), tilelab.cdiv(N, BN))
    host_matmul[grid](*descriptors(a, b, c, BM, BN, BK), M, N, K, BM, BN, BK, num_warps=4, num_stages=3)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=2e-2, atol=2e-1)


def test_compile_takes_triton_descriptor_types(rng):
    """``tilelab.compile`` reads Triton's ``tensordesc<fp16[..]>``; the kernel then takes the parts, in order."""
    sig = {"src_desc": "tensordesc<fp32[8, 8]>", "dst_desc": "tensordesc<fp32[8, 8]>", "dy": "i32", "dx": "i32"}
    ck = tilelab.compile(shifted_copy, sig, {"BY": 8, "BX": 8}, target="cpu")
    assert ck.arg_names == [
        "src_desc_base", "src_desc_shape0", "src_desc_shape1", "src_desc_stride0",
        "dst_desc_base", "dst_desc_shape0", "dst_desc_shape1", "dst_desc_stride0", "dy", "dx",
    ]  # fmt: skip
    src, dst = rng.standard_normal((16, 16)).astype(np.float32), np.zeros((16, 16), np.float32)
    ck[(2, 2)](src, 16, 16, 16, dst, 16, 16, 16, 0, 0)
    np.testing.assert_array_equal(dst, src)
    with pytest.raises(LaunchError, match="expected tensordesc"):
        tilelab.compile(shifted_copy, dict(sig, src_desc="tensordesc<fp32>"), {"BY": 8, "BX": 8}, target="cpu")


def test_warm_launches_read_each_descriptor_again(rng, builds):
    """Calls shaped alike skip binding and specializing, yet take each call's arrays, shapes and strides."""
    kernel = tilelab.jit(shifted_copy.fn)
    for rows in (13, 21, 9, 11):  # one int class: one compile, every call's shape honoured
        src = rng.standard_normal((rows, 32)).astype(np.float32)[:, :24]
        dst = np.full((24, 24), 7.0, np.float32)
        kernel[(3, 3)](TensorDescriptor.from_tensor(src, [8, 8]), TensorDescriptor.from_tensor(dst, [8, 8]), 0, 0, 8, 8)
        expected = np.full((24, 24), 0.0, np.float32)
        expected[:rows] = src
        np.testing.assert_array_equal(dst, expected)
    assert len(builds) == 1 and len(kernel.launches) == 1
    src_desc = TensorDescriptor.from_tensor(src, [8, 8])
    src_desc.strides = [6, 1]  # made invalid after it was checked: the warm path refuses it too
    with pytest.raises(LaunchError, match="multiples of 16 bytes"):
        kernel[(3, 3)](src_desc, TensorDescriptor.from_tensor(dst, [8, 8]), 0, 0, 8, 8)
