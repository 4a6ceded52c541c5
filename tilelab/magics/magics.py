"""The IPython magics class: parses the line, runs the cell's steps, displays the results.

Errors never show as a traceback wall: a ``CellError`` is displayed as its short message (with
the cell's line marked in HTML) and then raised, so that "run all" stops at the failing cell and
IPython shows only the message (``CellError._render_traceback_``).
"""

from __future__ import annotations

import ast
import html
import inspect
import time

import numpy as np
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display

from tilelab.runtime import LaunchError, cuda_driver
from tilelab.runtime.arrays import array_info
from tilelab.runtime.cuda_driver import CudaError
from tilelab.testing import do_bench

from .cell import CellError, compile_cell, define_kernel, gpu_for_cell
from .options import OptionError, parse_line


def _show_error(err: CellError, cell: str | None = None) -> None:
    from tilelab.viz.render import render_error, render_note, style_block  # the views load when first shown

    if cell is not None and err.line is not None:
        page = render_error(err.message, cell, 1, err.line)
    else:
        page = style_block() + f'<div class="tl-error"><div class="tl-error-msg">{html.escape(err.message)}</div></div>'
    display({"text/plain": err.message, "text/html": page or render_note(err.message)}, raw=True)


def _array_names(expr: str, namespace: dict) -> list[str]:
    """Names used in a launch expression whose values are arrays (the kernel's inputs and outputs)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return []
    names = dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    return [n for n in names if n in namespace and array_info(namespace[n]) is not None]


def run_panel_html(expr: str, seconds: float, namespace: dict) -> str:
    """The outputs of a launch: the time, then each array argument's shape, dtype and first values."""
    from tilelab.viz.render import render_table  # the views (pygments, ipywidgets, matplotlib) load when shown

    rows = [("launch", expr), ("time", f"{seconds * 1e3:.3f} ms (first launch, includes loading)")]
    for name in _array_names(expr, namespace):
        a = namespace[name]
        info = array_info(a)
        head = info.host.ravel()[:6] if info.host is not None else None
        values = np.array2string(head, precision=4, separator=", ") + "…" if head is not None else f"on {info.device}"
        rows.append((name, f"{info.elem}{list(getattr(a, 'shape', ()))} {values}"))
    return render_table(rows)


@magics_class
class TileMagics(Magics):
    """``%%tile_kernel``, ``%tile_bench``, ``%tile_inspect``; remembers the last compile of each kernel."""

    def __init__(self, shell):
        super().__init__(shell)
        self.last: dict = {}
        self.gpus: dict = {}
        self.benches: dict[str, float] = {}

    @cell_magic
    def tile_kernel(self, line: str, cell: str):
        """Define, compile and inspect the kernel of the cell (see ``tilelab.magics``)."""
        try:
            opts = parse_line(line)
            defined = define_kernel(self.shell, cell)
            compiled = compile_cell(opts, defined, self.shell.user_ns)
        except OptionError as e:
            err = CellError(str(e))
            _show_error(err)
            raise err from None
        except CellError as err:
            _show_error(err, cell)
            raise err from None
        self.last[defined.name] = compiled
        self.gpus[defined.name] = gpu_for_cell(opts, defined, self.shell.user_ns)
        self._display(compiled, opts, self.gpus[defined.name])

    def _display(self, compiled, opts, gpu) -> None:
        import ipywidgets as w

        from tilelab.viz import Inspector  # ipywidgets: ~2 s, paid by the first cell that shows it

        inspector = Inspector(compiled, show=opts.show, gpu=gpu, arch=opts.gpu)
        if not opts.run:
            display(inspector.widget)
            return
        try:
            seconds = self._run(opts.run, compiled)
        except CellError as err:
            display(inspector.widget)  # the compile worked: show what it produced, then why it did not run
            raise _shown(err) from None
        # the results above the inspector, both full width (side by side squeezes the inspector's tabs)
        panel = w.HTML(run_panel_html(opts.run, seconds, self.shell.user_ns))
        display(w.VBox([panel, inspector.widget], layout=w.Layout(width="100%")))

    def _run(self, expr: str, compiled) -> float:
        """Evaluates ``--run`` with the kernel's name bound to what was just compiled; returns seconds."""
        try:
            code = compile(expr, "<--run>", "eval")
        except SyntaxError as e:
            raise CellError(f"--run: not a Python expression: {e.msg}") from None
        _check_device(compiled)
        namespace = {**self.shell.user_ns, compiled.name: compiled}
        start = time.perf_counter()
        try:
            eval(code, namespace)
        except (LaunchError, CudaError) as e:
            raise CellError(f"--run: {e}") from None
        return time.perf_counter() - start

    @line_magic
    def tile_bench(self, line: str):
        """``%tile_bench <launch expression>``: the median time of the launch (``tilelab.testing.do_bench``)."""
        expr = line.strip()
        if not expr:
            raise _shown(CellError("%tile_bench: give a launch expression, e.g. add[(g,)](x, y, out, n)"))
        code = compile(expr, "<%tile_bench>", "eval")
        ns = self.shell.user_ns
        ms = do_bench(lambda: eval(code, ns), return_mode="median")
        self.benches[expr] = ms
        _place_on_roofline(expr, ns, ms, self.last)
        text = f"{expr}: {ms:.4f} ms (median)"
        display(
            {"text/plain": text, "text/html": f"<code>{html.escape(expr)}</code>: <b>{ms:.4f} ms</b> (median)"},
            raw=True,
        )
        return None

    @line_magic
    def tile_inspect(self, line: str):
        """``%tile_inspect add``: the inspector of the last compile of ``add``."""
        from tilelab.viz import Inspector  # ipywidgets: ~2 s, paid by the first cell that shows it

        name = line.strip()
        if name not in self.last:
            known = ", ".join(self.last) or "none yet"
            raise _shown(CellError(f"%tile_inspect: no compiled kernel named '{name}' (compiled: {known})"))
        display(Inspector(self.last[name], gpu=self.gpus.get(name)).widget)


def _place_on_roofline(expr: str, ns: dict, ms: float, compiled_by_name: dict) -> None:
    """Puts a timed launch ``kernel[grid](args)`` on the roofline view, when its kernel was compiled here."""
    try:
        call = ast.parse(expr, mode="eval").body
        target = call.func if isinstance(call, ast.Call) else None
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
            return
        compiled = compiled_by_name.get(target.value.id)
        grid = eval(compile(ast.Expression(target.slice), "<grid>", "eval"), ns)
        if compiled is None or callable(grid):
            return
        args = [eval(compile(ast.Expression(a), "<arg>", "eval"), ns) for a in call.args]
        args += [eval(compile(ast.Expression(k.value), "<arg>", "eval"), ns) for k in call.keywords]
        from tilelab.viz.plugins import record  # the views load when first shown

        names = list(inspect.signature(ns[target.value.id]._tilelab_fn).parameters)
        names = names[: len(call.args)] + [k.arg for k in call.keywords]
        scalars = {n: v for n, v in zip(names, args) if isinstance(v, (int, float))}
        record(compiled, ms * 1e-3, tuple(grid) if isinstance(grid, (tuple, list)) else (grid,), args=scalars)
    except Exception:  # the timing stands on its own; the roofline point is a bonus
        return


def _check_device(compiled) -> None:
    """``--run`` of a CUDA kernel on a machine without a GPU: one clear message instead of a driver error."""
    if compiled.target.split(":")[0] == "cuda" and not cuda_driver.is_available():
        raise CellError(
            f"--run: no GPU on this machine: {compiled.name} was compiled for inspection only "
            "(PTX, SASS, Resources); run it with --target cpu, with --target cuda-ir (the CUDA passes' IR on the "
            "interpreter), or on a machine with an NVIDIA GPU"
        )


def _shown(err: CellError) -> CellError:
    _show_error(err)
    return err
