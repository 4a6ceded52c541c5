"""The tour in a real JupyterLab, driven in headless Chromium: the inspector renders and its links work.

Needs Debian's chromium (``apt-get install -y chromium``) and Playwright for Python
(``pip install playwright``; its own browser download is not used). Saves
``test-output/inspector.png`` and a screenshot of each analysis tab opened (``coalescing.png``, ...).
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


def _run_all(page, url: str) -> None:
    page.goto(f"{url}/lab/tree/00_tour.ipynb")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function("window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')")
    page.get_by_text("(ipykernel) | Idle").wait_for(timeout=90_000)  # the kernel has started
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
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
        finally:
            page.screenshot(path=str(OUTPUT / "notebook.png"), full_page=False)
            browser.close()
