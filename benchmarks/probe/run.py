"""PTX of kernels outside the corpus, tilelab against Triton, for sm_90a (no GPU); with ``--gpu``, their times.

    python benchmarks/probe/run.py              # every kernel
    python benchmarks/probe/run.py fp8 dequant  # kernels whose name contains a word
    python benchmarks/probe/run.py --gpu [words] [--out FILE] [--dump DIR]   # on a CUDA GPU

One row per kernel and compiler: PTX instructions, registers (``ptxas -v``), barriers, and the widths
of its global loads and stores. Triton's columns need Triton installed (any version: the development
machine's differs from the GPU machine's).

With ``--gpu``, each kernel runs as a case of ``benchmarks/probe/cases.py`` (LLM-sized inputs, a few
configs including the one compiled here) through the corpus's GPU driver (``run_gpu`` of
``benchmarks/corpus/run.py``): both compilers on the same source, every config checked against torch,
the best of each timed in turns with torch's, one markdown row per kernel (``--out``: also to a file;
``--dump``: each compiler's code of its best config to a folder).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.corpus.run import _INSTRUCTION, _triton_compile, prime_bytecode, ptxas_warnings  # noqa: E402
from benchmarks.probe import kernels as K  # noqa: E402

#: name, kernel, signature, constexprs, divisibility (16 where a Triton launch would find it), warps
CASES = [
    ("gelu f16", K.gelu_kernel, {"x_ptr": "*f16", "y_ptr": "*f16", "n": "i32"}, {"BLOCK": 1024}, {"n": 16}, 4),
    ("embedding gather", K.embedding_kernel,
     {"idx_ptr": "*i64", "w_ptr": "*f16", "out_ptr": "*f16", "n_tokens": "i32", "dim": "i32", "stride_w": "i32",
      "stride_out": "i32"}, {"BLOCK_T": 32, "BLOCK_D": 128},
     {"idx_ptr": 16, "w_ptr": 16, "dim": 16, "stride_w": 16, "stride_out": 16}, 4),
    ("column sums", K.col_sum_kernel, {"x_ptr": "*f32", "out_ptr": "*f32", "M": "i32", "N": "i32", "stride_m": "i32"},
     {"BLOCK_M": 64, "BLOCK_N": 128}, {"N": 16, "stride_m": 16}, 4),
    ("residual add + rmsnorm bf16", K.add_rmsnorm_kernel,
     {"x_ptr": "*bf16", "r_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "x_stride": "i32", "r_stride": "i32",
      "y_stride": "i32", "n_cols": "i32", "eps": "f32"}, {"BLOCK": 4096},
     {"r_ptr": 16, "w_ptr": 16, "x_stride": 16, "r_stride": 16, "y_stride": 16, "n_cols": 16}, 8),
    ("softmax backward", K.softmax_bwd_kernel,
     {"dy_ptr": "*f32", "y_ptr": "*f32", "dx_ptr": "*f32", "stride": "i32", "n_cols": "i32"}, {"BLOCK": 2048},
     {"dy_ptr": 16, "dx_ptr": 16, "stride": 16}, 8),
    ("int4 dequant (interleave)", K.int4_dequant_kernel,
     {"q_ptr": "*u8", "scale_ptr": "*f16", "out_ptr": "*f16", "n": "i32"}, {"BLOCK": 1024},
     {"q_ptr": 16, "scale_ptr": 16, "n": 16}, 4),
    ("rope pairs (split / join)", K.rope_pairs_kernel,
     {"x_ptr": "*f16", "cos_ptr": "*f16", "sin_ptr": "*f16", "out_ptr": "*f16", "stride": "i32"},
     {"HALF": 64, "BLOCK": 128}, {"cos_ptr": 16, "sin_ptr": 16, "stride": 16}, 4),
    ("argmax", K.argmax_kernel, {"x_ptr": "*f32", "out_ptr": "*i32", "n_cols": "i32", "stride": "i32"},
     {"BLOCK": 4096}, {"stride": 16}, 8),
    ("fp8 row quantization", K.fp8_quant_kernel,
     {"x_ptr": "*bf16", "y_ptr": "*fp8e4nv", "scale_ptr": "*f32", "n_cols": "i32"}, {"BLOCK": 4096},
     {"y_ptr": 16, "scale_ptr": 16, "n_cols": 16}, 8),
    ("column cumsum", K.colcumsum_kernel, {"x_ptr": "*f32", "y_ptr": "*f32", "n_cols": "i32"},
     {"BM": 64, "BN": 64}, {"n_cols": 16}, 4),
    ("softmax keep_dims", K.softmax_keep_kernel,
     {"x_ptr": "*f32", "y_ptr": "*f32", "stride": "i32", "n_cols": "i32"}, {"BM": 4, "BN": 1024}, {"stride": 16}, 4),
    ("gemv bf16", K.gemv_kernel,
     {"w_ptr": "*bf16", "x_ptr": "*bf16", "y_ptr": "*bf16", "N": "i32", "K": "i32", "stride_w": "i32"},
     {"BLOCK_N": 32, "BLOCK_K": 256}, {"N": 16, "K": 16, "stride_w": 16}, 4),
    ("welford layernorm", K.welford_layernorm_kernel,
     {"x_ptr": "*f16", "y_ptr": "*f16", "w_ptr": "*f32", "b_ptr": "*f32", "stride": "i32", "n_cols": "i32",
      "eps": "f32"}, {"BLOCK": 1024}, {"stride": 16, "n_cols": 16}, 4),
    ("online softmax", K.online_softmax_kernel,
     {"x_ptr": "*bf16", "y_ptr": "*f32", "stride_x": "i32", "stride_y": "i32", "n_cols": "i32"}, {"BLOCK": 2048},
     {"stride_x": 16, "stride_y": 16, "n_cols": 16}, 8),
    ("swiglu backward", K.swiglu_bwd_kernel,
     {"dy_ptr": "*bf16", "a_ptr": "*bf16", "b_ptr": "*bf16", "da_ptr": "*bf16", "db_ptr": "*bf16", "stride": "i32",
      "n_cols": "i32"}, {"BLOCK": 16384}, {"stride": 16, "n_cols": 16}, 16),
    ("w8a16 matmul", K.w8a16_matmul_kernel,
     {"a_ptr": "*f16", "b_ptr": "*i8", "scale_ptr": "*f16", "c_ptr": "*f16", "M": "i32", "N": "i32", "K": "i32",
      "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"},
     {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
     {"M": 16, "N": 16, "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16}, 8),
    ("linear + gelu epilogue", K.linear_gelu_kernel,
     {"x_ptr": "*f16", "w_ptr": "*f16", "bias_ptr": "*f16", "y_ptr": "*f16", "M": "i32", "N": "i32", "K": "i32",
      "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
     {"N": 16, "K": 16, "stride_xm": 16, "stride_wn": 16, "stride_ym": 16}, 8),
    ("conv2d 3x3 nhwc (implicit gemm)", K.conv2d_nhwc_kernel,
     {"x_ptr": "*f16", "w_ptr": "*f16", "y_ptr": "*f16", "N": "i32", "H": "i32", "W": "i32", "C": "i32", "K": "i32",
      "P": "i32", "Q": "i32"}, {"R": 3, "S": 3, "PAD": 1, "STRIDE": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
     {"N": 16, "C": 16, "K": 16}, 8),
    ("embedding backward (atomics)", K.embedding_bwd_kernel,
     {"idx_ptr": "*i64", "dy_ptr": "*bf16", "dw_ptr": "*f32", "n_tokens": "i32", "dim": "i32"},
     {"BLOCK_T": 32, "BLOCK_D": 128}, {"dim": 16}, 4),
    ("linear recurrence (chunked scan)", K.linear_scan_kernel,
     {"a_ptr": "*f32", "b_ptr": "*f32", "h_ptr": "*f32", "L": "i32", "D": "i32"}, {"BLOCK_L": 64, "BLOCK_D": 64},
     {"L": 16, "D": 16}, 4),
    ("moe router softmax + top-2", K.moe_router_kernel,
     {"logits_ptr": "*f32", "weights_ptr": "*f32", "experts_ptr": "*i32", "n_tokens": "i32"},
     {"E": 64, "TOPK": 2, "BLOCK_T": 32}, {}, 4),
    ("group norm f16", K.group_norm_kernel,
     {"x_ptr": "*f16", "y_ptr": "*f16", "w_ptr": "*f32", "b_ptr": "*f32", "C": "i32", "HW": "i32", "G": "i32",
      "eps": "f32"}, {"BLOCK": 2048}, {"C": 16, "HW": 16, "G": 16}, 8),
    ("decode attention (paged, GQA)", K.decode_attention_kernel,
     {"q_ptr": "*f16", "k_cache": "*f16", "v_cache": "*f16", "token_table": "*i32", "seq_lens": "*i32",
      "out_ptr": "*f16", "scale": "f32", "stride_qb": "i32", "stride_qh": "i32", "stride_kt": "i32",
      "stride_kh": "i32", "stride_vt": "i32", "stride_vh": "i32", "stride_table": "i32", "stride_ob": "i32",
      "stride_oh": "i32"}, {"GROUP": 8, "BLOCK_H": 16, "BLOCK_N": 64, "HEAD_DIM": 128},
     {"stride_qb": 16, "stride_qh": 16, "stride_kt": 16, "stride_kh": 16, "stride_vt": 16, "stride_vh": 16,
      "stride_table": 16, "stride_ob": 16, "stride_oh": 16}, 4),
    ("grouped matmul (address tables)", K.grouped_matmul_kernel,
     {"a_ptrs": "*i64", "b_ptrs": "*i64", "c_ptrs": "*i64", "sizes": "*i32", "strides": "*i32", "n_groups": "i32"},
     {"NUM_PROGRAMS": 132, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, {}, 8),
    ("w4a16 matmul (gptq nibbles)", K.w4a16_matmul_kernel,
     {"a_ptr": "*f16", "b_ptr": "*i32", "scales_ptr": "*f16", "zeros_ptr": "*i32", "c_ptr": "*f16", "M": "i32",
      "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32", "stride_sg": "i32",
      "stride_zg": "i32"}, {"GROUP_SIZE": 128, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
     {"M": 16, "N": 16, "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16, "stride_sg": 16,
      "stride_zg": 16}, 4),
    ("fp8 block-scaled matmul", K.fp8_block_matmul_kernel,
     {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "a_scale_ptr": "*f32", "b_scale_ptr": "*f32", "c_ptr": "*bf16",
      "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bn": "i32", "stride_cm": "i32",
      "stride_asm": "i32", "stride_bsn": "i32"},
     {"SCALE_BLOCK": 128, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8},
     {"N": 16, "K": 16, "stride_am": 16, "stride_bn": 16, "stride_cm": 16}, 8),
    ("layer norm backward (spin locks)", K.layernorm_bwd_locked_kernel,
     {"dx_ptr": "*f16", "dy_ptr": "*f16", "dw_ptr": "*f32", "db_ptr": "*f32", "x_ptr": "*f16", "w_ptr": "*f16",
      "mean_ptr": "*f32", "rstd_ptr": "*f32", "locks": "*i32", "stride": "i32", "n_cols": "i32"},
     {"GROUP_M": 64, "BLOCK": 8192}, {"stride": 16, "n_cols": 16}, 8),
    ("varlen attention (packed sequences)", K.varlen_attention_kernel,
     {"q_ptr": "*f16", "k_ptr": "*f16", "v_ptr": "*f16", "o_ptr": "*f16", "cu_seqlens": "*i32", "scale": "f32",
      "stride_t": "i32", "stride_h": "i32"}, {"CAUSAL": True, "BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 128},
     {"stride_t": 16, "stride_h": 16}, 8),
    ("nf4 dequant (codebook gather)", K.nf4_dequant_kernel,
     {"q_ptr": "*u8", "absmax_ptr": "*f32", "code_ptr": "*f32", "out_ptr": "*bf16", "n": "i32"},
     {"BLOCK": 1024, "QBLOCK": 64}, {"n": 16}, 4),
    ("fused moe (sorted token ids)", K.fused_moe_kernel,
     {"a_ptr": "*f16", "w_ptr": "*f16", "c_ptr": "*f16", "route_w_ptr": "*f32", "sorted_ids_ptr": "*i32",
      "expert_ids_ptr": "*i32", "padded_len_ptr": "*i32", "N": "i32", "K": "i32", "num_valid": "i32",
      "stride_am": "i32", "stride_we": "i32", "stride_wn": "i32", "stride_cm": "i32"},
     {"stride_ak": 1, "stride_wk": 1, "stride_cn": 1, "TOP_K": 2, "MUL_ROUTED_WEIGHT": True, "BLOCK_M": 64,
      "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8},
     {"N": 16, "K": 16, "num_valid": 16, "stride_am": 16, "stride_we": 16, "stride_wn": 16, "stride_cm": 16}, 8),
    ("int8 row quantization (libdevice rint)", K.int8_quant_kernel,
     {"x_ptr": "*bf16", "y_ptr": "*i8", "scale_ptr": "*f32", "stride": "i32", "n_cols": "i32"}, {"BLOCK": 8192},
     {"stride": 16}, 8),
    ("tail mass (reverse cumsum)", K.tail_mass_kernel,
     {"p_ptr": "*f32", "out_ptr": "*f32", "stride": "i32", "n_cols": "i32"}, {"BLOCK": 1024}, {}, 4),
    ("dropout + residual + layer norm", K.dropout_add_layernorm_kernel,
     {"x_ptr": "*bf16", "res_ptr": "*bf16", "w_ptr": "*f32", "b_ptr": "*f32", "y_ptr": "*bf16", "keep_ptr": "*i8",
      "seed": "i32", "p": "f32", "stride": "i32", "n_cols": "i32", "eps": "f32"}, {"BLOCK": 4096},
     {"stride": 16, "n_cols": 16}, 8),
    ("f16-accumulate matmul", K.f16_acc_matmul_kernel,
     {"a_ptr": "*f16", "b_ptr": "*f16", "c_ptr": "*f16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
      "stride_bk": "i32", "stride_cm": "i32"}, {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "ACC_IN_DOT": True},
     {"M": 16, "N": 16, "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16}, 8),
    ("f32 matmul in tf32x3", K.precision_matmul_kernel,
     {"a_ptr": "*f32", "b_ptr": "*f32", "c_ptr": "*f32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
      "stride_bk": "i32", "stride_cm": "i32"}, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "PRECISION": "tf32x3"},
     {"M": 16, "N": 16, "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16}, 8),
    ("f32 matmul in ieee (FMA)", K.precision_matmul_kernel,
     {"a_ptr": "*f32", "b_ptr": "*f32", "c_ptr": "*f32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
      "stride_bk": "i32", "stride_cm": "i32"}, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "PRECISION": "ieee"},
     {"M": 16, "N": 16, "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16}, 4),
    ("expert histogram (tl.histogram)", K.expert_histogram_kernel,
     {"ids_ptr": "*i32", "counts_ptr": "*i32", "n": "i32"}, {"BINS": 256, "BLOCK": 4096}, {}, 4),
    ("weight gradient (x.T @ dy)", K.weight_grad_kernel,
     {"x_ptr": "*bf16", "dy_ptr": "*bf16", "dw_ptr": "*bf16", "T": "i32", "IN": "i32", "OUT": "i32", "stride_xt": "i32",
      "stride_dyt": "i32", "stride_dwi": "i32"}, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
     {"IN": 16, "OUT": 16, "stride_xt": 16, "stride_dyt": 16, "stride_dwi": 16}, 8),
    ("attention with a bias", K.attention_bias_kernel,
     {"Q": "*f16", "K": "*f16", "V": "*f16", "B": "*f16", "Out": "*f16", "sm_scale": "f32", "N_CTX": "i32",
      "bias_len": "i32"}, {"OTHER": float("-inf"), "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64},
     {"N_CTX": 16, "bias_len": 16}, 8),
]  # fmt: skip


def summary(ptx: str) -> str:
    """``instructions | registers | barriers | loads | stores`` of ``ptx`` (registers from ``ptxas -v``)."""
    code = [line for line in ptx.splitlines() if ".loc" not in line and ".file" not in line]
    count = sum(1 for line in code if _INSTRUCTION.match(line))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    log = subprocess.run(["ptxas", "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"], capture_output=True, text=True)
    regs = re.search(r"Used (\d+) registers", log.stderr)
    loads = " ".join(sorted(set(re.findall(r"ld\.global[a-z0-9.:]*", ptx))))
    stores = " ".join(sorted(set(re.findall(r"st\.global[a-z0-9.:]*", ptx))))
    return f"{count} | {regs.group(1) if regs else '?'} | {ptx.count('bar.sync')} | {loads} | {stores}"


def main(words) -> None:
    import tilelab

    try:
        import triton  # noqa: F401

        have_triton = True
    except ImportError:
        have_triton = False
    print("| kernel | compiler | PTX instructions | registers | barriers | global loads | global stores "
          "| ptxas warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, fn, sig, consts, div, warps in CASES:
        if words and not any(w in name for w in words):
            continue
        div = {**{n: 16 for n, t in sig.items() if t.startswith("*")}, **div}
        cfg = {"num_warps": warps, "num_stages": 3}
        ck = tilelab.compile(
            tilelab.jit(fn), sig, consts, target="cuda:sm_90a", num_warps=warps, num_stages=3, divisibility=div,
            snapshots=False, cache=False,
        )  # fmt: skip
        print(f"| {name} | tilelab | {summary(ck.asm['ptx'])} | {ptxas_warnings(ck.metadata)} |", flush=True)
        if have_triton:
            print(f"| {name} | Triton | {summary(_triton_compile(fn, sig, consts, div, cfg).asm['ptx'])} | |",
                  flush=True)  # fmt: skip


def gpu(words, out_path=None, dump=None) -> None:
    """The probe's kernels swept, checked and timed on a CUDA GPU by both compilers (the corpus's driver)."""
    from benchmarks.corpus.run import run_gpu
    from benchmarks.probe.cases import CASES as GPU_CASES

    names = [n for n in GPU_CASES if not words or any(w in n for w in words)]
    run_gpu(names, out_path, dump, cases=GPU_CASES)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="*", help="only the kernels whose name contains one of these words")
    parser.add_argument("--gpu", action="store_true", help="time the kernels on a CUDA GPU, both compilers")
    parser.add_argument("--out", help="with --gpu: also write the table to this file")
    parser.add_argument("--dump", help="with --gpu: write each compiler's code of each best config to this folder")
    args = parser.parse_args()
    if (args.out or args.dump) and not args.gpu:
        parser.error("--out and --dump go with --gpu")
    if args.gpu:
        prime_bytecode()  # before any compile, as the corpus's driver does
        gpu(args.words, args.out, args.dump)
    else:
        main(args.words)
