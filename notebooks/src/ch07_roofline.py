"""07: roofline and performance engineering: predict, change, measure."""

from .cells import code, exercise, md, setup
from .cells import notebook as _notebook

FILENAME = "07_roofline.ipynb"


def notebook():
    return _notebook(
        [
            md("""
        # 07 · Roofline and performance engineering

        A kernel is limited either by arithmetic (FLOP/s) or by memory traffic (bytes/s). Its **arithmetic
        intensity** — FLOPs per byte moved — says which: below the machine's balance point (peak FLOP/s over
        peak bytes/s) it is memory-bound. The loop: **predict** from counts, **change** one thing, **measure**.
        """),
            setup(),
            code("""
        from tilelab.compiler.analysis import count_flops_bytes


        @tilelab.jit
        def add(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


        @tilelab.jit
        def poly(x, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            v = tl.load(x + offs, mask=mask)
            acc = v
            for _ in tl.static_range(16):
                acc = acc * v + 1.0
            tl.store(out + offs, acc, mask=mask)


        n, BLOCK = 1 << 18, 1024
        grid = (n // BLOCK, 1, 1)
        sig = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
        costs = {}
        for kernel, signature in ((add, sig), (poly, {k: v for k, v in sig.items() if k != "y"})):
            compiled = tilelab.compile(kernel, signature=signature, constants={"BLOCK": BLOCK}, target=TARGET)
            costs[kernel.__name__] = cost = count_flops_bytes(compiled.module, grid=grid)
            print(f"{kernel.__name__:5}: {cost.flops:>10,} FLOPs {cost.bytes:>10,} B  intensity {cost.intensity:.2f}")
        """),
            md("""
        **Question.** The roofline tab of `poly` draws its intensity as a vertical line before it is
        timed. Is it left or right of the ridge (where the bandwidth roof meets the compute roof) of an
        sm_90 GPU? Of this CPU?
        """),
            code("""
        from tilelab.viz import inspect

        inspect(poly, {"x": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": BLOCK}, target=TARGET, show="roofline")
        """),
            md("""
        ## Measure

        `do_bench` runs a function many times and returns milliseconds. FLOP/s and bytes/s follow from the
        counts. On this machine, for this size, which kernel gets closer to its roof?
        """),
            code("""
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = np.empty_like(x)
        times = {
            "add": do_bench(lambda: add[grid[:1]](x, y, out, n, BLOCK=BLOCK, target=TARGET), warmup=5, rep=50),
            "poly": do_bench(lambda: poly[grid[:1]](x, out, n, BLOCK=BLOCK, target=TARGET), warmup=5, rep=50),
        }
        for name, ms in times.items():
            c = costs[name]
            print(f"{name:5}: {ms:6.3f} ms  {c.bytes / ms / 1e6:7.2f} GB/s  {c.flops / ms / 1e6:7.2f} GFLOP/s")
        """),
            md("""
        ## The roofline plot

        Attainable FLOP/s = min(peak FLOP/s, intensity × bandwidth). The peaks below are rough numbers for a
        laptop CPU core; put your machine's in (or an H100's: ~50 TFLOP/s fp32, ~3 TB/s).
        """),
            code("""
        import matplotlib.pyplot as plt

        peak_gflops, peak_gbs = 50.0, 20.0
        intensity = np.logspace(-2, 2, 100)
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.loglog(intensity, np.minimum(peak_gflops, intensity * peak_gbs), "k-", label="roof")
        for name, ms in times.items():
            c = costs[name]
            ax.loglog(c.intensity, c.flops / ms / 1e6, "o", label=name)
        ax.set_xlabel("FLOPs per byte"), ax.set_ylabel("GFLOP/s"), ax.legend()
        plt.show()
        """),
            md("""
        ## Let the machine choose: autotuning

        Which `BLOCK` is fastest depends on the machine. `@tilelab.autotune` compiles and times each config
        on the first launch (once per value of its `key`) and keeps the fastest; in Jupyter a progress bar
        follows it, then a table and a chart of each config's time. A config that cannot run is skipped
        with its reason.

        **Question.** Which `BLOCK` won here, by how much, and why did `BLOCK=3000` fail?
        """),
            code("""
        import tilelab.viz  # noqa: F401  (in Jupyter: the autotuner's progress bar and results)


        @tilelab.autotune([tilelab.Config({"BLOCK": b}) for b in (256, 1024, 3000, 4096)], key=["n"], warmup=2, rep=10)
        @tilelab.jit
        def add_tuned(x, y, out, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


        add_tuned[lambda meta: (tilelab.cdiv(n, meta["BLOCK"]),)](x, y, out, n, target=TARGET)
        assert_close(out, x + y)
        print("best:", add_tuned.best_config)
        """),
            *exercise(
                """
            Predict before you measure: if `poly` loops 64 times instead of 16, by how much does its intensity
            grow? Compute it with `count_flops_bytes` on a `poly64` kernel.
            """,
                """
            predicted_ratio = None  # YOUR PREDICTION HERE
            """,
                """
            print("predicted:", predicted_ratio)
            """,
                """
            @tilelab.jit
            def poly64(x, out, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                mask = offs < n
                v = tl.load(x + offs, mask=mask)
                acc = v
                for _ in tl.static_range(64):
                    acc = acc * v + 1.0
                tl.store(out + offs, acc, mask=mask)

            compiled = tilelab.compile(poly64, signature={"x": "*fp32", "out": "*fp32", "n": "i32"},
                                       constants={"BLOCK": BLOCK}, target=TARGET)
            ratio = count_flops_bytes(compiled.module, grid=grid).intensity / costs["poly"].intensity
            print(f"intensity grew {ratio:.1f}x")  # the bytes stay, the FLOPs grow 4x
            assert 3.5 < ratio < 4.5
            """,
            ),
        ]
    )
