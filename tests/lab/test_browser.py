"""The course in a real JupyterLab, driven in headless Chromium: the inspector renders, its links work,
and the GPU is shown on a machine without one.

Chapter 00 (the tour): the inspector's links and analysis tabs, and its PTX tab (from the sm_90 compile made
beside the CPU one) full of PTX. Chapter 03: the mma accumulator drawn as a grid with ``warp:lane:register``
in each cell. Chapter 06: the cse pass's diff is the one line it removed.

Needs Debian's chromium (``apt-get install -y chromium``) and Playwright for Python
(``pip install playwright``; its own browser download is not used). Saves screenshots under
``test-output/``: ``inspector.png``, one per analysis tab opened (``coalescing.png``, ...), ``ptx.png``,
``ch03_layout_grid.png``, ``ch06_cse_diff.png``.
"""

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.lab.tour import ROOT, kernel_env, prepared_tour

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUTPUT = ROOT / "test-output"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"JupyterLab did not answer at {url}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    directory = tmp_path_factory.mktemp("lab")
    prepared_tour(directory)
    for chapter in CHAPTERS:
        shutil.copy(ROOT / "notebooks" / chapter, directory / chapter)
    env = kernel_env()
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[name] = str(tmp_path_factory.mktemp(name.lower()))
    # Render every cell (no windowing), so that the whole notebook is in the DOM.
    settings = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    # No "get notified about Jupyter news?" toast over the screenshot (and no network to fetch news).
    news = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port = _free_port()
    args = [sys.executable, "-m", "jupyterlab", f"--port={port}", "--ip=127.0.0.1", "--no-browser", "--allow-root"]
    args += ["--ServerApp.token=", "--ServerApp.password=", "--ServerApp.open_browser=False"]
    args += [f"--ServerApp.root_dir={directory}", "--LabApp.expose_app_in_browser=True"]
    log = open(directory / "lab.log", "w")
    proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/status", 60)
        yield f"http://127.0.0.1:{port}", directory
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


# A notebook opened before the lab has its kernel specs asks which kernel to start (a "Select Kernel" dialog
# that "Run all" then waits on): open it from an empty workspace once the specs are there, and wait for its
# own kernel. A dialog that shows up anyway ends the wait with its text instead of a timeout (a Select Kernel
# one is answered, once, as a user would).
NOTEBOOK_READY = """name => {
    const dialog = document.querySelector('.jp-Dialog');
    if (dialog) return 'dialog: ' + dialog.innerText.replace(/\\s+/g, ' ');
    const w = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === name);
    const kernel = w && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!(kernel && kernel.status === 'idle' && w.sessionContext.isReady && w.content.widgets.length > 0) && w.id;
}"""


def _open_and_run(page, url: str, name: str):
    """Opens ``name`` in a lab with no other document open, starts "Run all" and returns the notebook's panel.

    Does not wait for the cells: callers wait for the outputs they check.
    """
    page.goto(f"{url}/lab?reset")
    page.wait_for_function(
        """() => { const app = window.jupyterapp;
                   return app && app.serviceManager.kernelspecs.specs !== null
                       && app.commands.hasCommand('docmanager:open')
                       && app.commands.hasCommand('notebook:run-all-cells'); }""",
        timeout=90_000,
    )
    page.evaluate("name => { window.jupyterapp.commands.execute('docmanager:open', {path: name}); }", name)
    state = page.wait_for_function(NOTEBOOK_READY, arg=name, timeout=120_000).json_value()
    if state.startswith("dialog: Select Kernel"):  # should the race happen anyway: answer as a user would
        page.locator(".jp-Dialog .jp-mod-accept").click()
        state = page.wait_for_function(NOTEBOOK_READY, arg=name, timeout=120_000).json_value()
    assert not state.startswith("dialog: "), f"{name}: {state}"
    page.evaluate("id => window.jupyterapp.shell.activateById(id)", state)
    panel = page.locator("#" + state)
    panel.locator(".jp-Cell").first.click()
    # not awaited: the command's promise settles only when the last cell has run
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    return panel


def _run_all(page, url: str) -> None:
    _open_and_run(page, url, "00_tour.ipynb")
    # "Run all" stops at the cell that shows a compile error; the cells before it must have run.
    page.wait_for_function(
        """() => {
            const cells = [...document.querySelectorAll('.jp-CodeCell')];
            const prompt = c => c.querySelector('.jp-InputPrompt').textContent;
            const last = cells.find(c => c.querySelector('.cm-content').textContent.includes('%tile_inspect'));
            return last && /\\[\\d+\\]/.test(prompt(last)) && !cells.some(c => prompt(c).includes('*'));
        }""",
        timeout=150_000,
    )


CHAPTERS = ["03_matmul.ipynb", "06_inside_the_compiler.ipynb"]
ANALYSIS_TABS = ["coalescing", "layouts"]

# The figure drawn in the visible pane: a loaded PNG (data or blob URL) of real size, and not blank,
# i.e. drawn onto a canvas it shows many distinct colours (a blank or failed figure shows one or two).
FIGURE_DRAWN = """inspector => {
    const img = [...inspector.querySelectorAll('img')].find(i => i.offsetParent !== null
        && /^(data:image\\/png|blob:)/.test(i.src) && i.complete && i.naturalWidth > 200 && i.naturalHeight > 150);
    if (!img) return false;
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    for (let k = 0; k < pixels.length; k += 4 * 7) colours.add(pixels[k] << 16 | pixels[k + 1] << 8 | pixels[k + 2]);
    return colours.size > 16 ? [img.naturalWidth, img.naturalHeight, colours.size] : false;
}"""


def _open_analysis_tab(page, inspector, name: str) -> list:
    """Clicks the tab ``name`` and waits for its figure (the view draws when its tab opens); saves a screenshot.

    Returns ``[width, height, distinct colours]`` of the figure.
    """
    inspector.locator(".lm-TabBar-tab", has_text=name).first.click()
    if name == "layouts":  # an HTML grid, one cell per element
        cells = inspector.locator("table.tl-grid td")
        cells.first.wait_for(timeout=120_000)
        inspector.scroll_into_view_if_needed()
        inspector.screenshot(path=str(OUTPUT / f"{name}.png"))
        return [cells.count(), 1000, 100]
    drawn = page.wait_for_function(FIGURE_DRAWN, arg=inspector.element_handle(), timeout=120_000).json_value()
    inspector.scroll_into_view_if_needed()
    inspector.screenshot(path=str(OUTPUT / f"{name}.png"))
    return drawn


def test_inspector_renders_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, _ = lab
    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            _run_all(page, url)
            inspector = page.locator(".tl-inspector").first
            inspector.wait_for(timeout=60_000)
            tabs = inspector.locator(".lm-TabBar-tab").all_inner_texts()
            assert {"Source", "Passes", "LLVM IR", "Resources"} <= {t.strip() for t in tabs}
            assert inspector.locator(".tl-del, .tl-add").count() > 0  # the chosen pass's diff marks lines
            code_lines = inspector.locator("select[multiple]").first
            values = code_lines.locator("option").evaluate_all(
                "opts => opts.filter(o => o.textContent.includes('←')).map(o => o.value)"
            )
            code_lines.select_option(values[len(values) // 2])
            # the IR line and its source line get highlighted (a kernel round trip: allow for a busy machine)
            inspector.locator(".tl-line.tl-hl").nth(1).wait_for(timeout=30_000)
            assert inspector.locator(".tl-line.tl-hl").count() >= 2
            inspector.scroll_into_view_if_needed()
            inspector.screenshot(path=str(OUTPUT / "inspector.png"))
            for name in ANALYSIS_TABS:
                width, height, colours = _open_analysis_tab(page, inspector, name)
                assert width > 200 and height > 150 and colours > 16, name
            _check_gpu_ptx(inspector)
        finally:
            page.screenshot(path=str(OUTPUT / "notebook.png"), full_page=False)
            browser.close()


def _check_gpu_ptx(inspector) -> None:
    """The PTX tab of a CPU run shows the sm_90 compile: lines of PTX, and the header says where they come from."""
    assert "from cuda:sm_90" in inspector.locator(".widget-html").first.inner_text()
    inspector.locator(".lm-TabBar-tab", has_text="PTX").first.click()
    pane = inspector.locator(".tl-code:visible").first
    pane.wait_for(timeout=60_000)
    text = pane.inner_text()
    assert ".entry add(" in text and ".target sm_90" in text and pane.locator(".tl-line").count() > 20
    inspector.screenshot(path=str(OUTPUT / "ptx.png"))


def test_chapters_03_and_06_draw_the_gpu_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, _ = lab
    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        try:
            panel = _open_and_run(page, url, CHAPTERS[0])
            grid = panel.locator("table.tl-grid").first
            grid.wait_for(timeout=300_000)
            panel.locator("table.tl-banks").nth(1).wait_for(timeout=120_000)
            labels = grid.locator("td").all_inner_texts()
            assert len(labels) == 16 * 8 and labels[:3] == ["0:0:0", "0:0:1", "0:1:0"]  # lane 0 holds C[0, 0:2]
            assert panel.locator("table.tl-banks").count() >= 2  # the column read, swizzled and not
            grid.scroll_into_view_if_needed()
            grid.screenshot(path=str(OUTPUT / "ch03_layout_grid.png"))

            panel = _open_and_run(page, url, CHAPTERS[1])
            inspector = panel.locator(".tl-inspector").first
            inspector.wait_for(timeout=300_000)
            diff = inspector.locator(".tl-code:visible").first
            diff.locator(".tl-del").first.wait_for(timeout=60_000)
            assert "cse" in inspector.inner_text()
            changed = diff.locator(".tl-del, .tl-add").all_inner_texts()
            assert len(changed) == 1 and "tt.make_range" in changed[0] and "loc(" not in changed[0]
            inspector.scroll_into_view_if_needed()
            inspector.screenshot(path=str(OUTPUT / "ch06_cse_diff.png"))
        finally:
            page.screenshot(path=str(OUTPUT / "chapters.png"), full_page=False)
            browser.close()
