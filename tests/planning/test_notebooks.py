"""The capacity-planning notebooks run from a clean kernel with their small parameters."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.planning.conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"

#: what each notebook's closing cell must print (its findings, computed from its runs)
FINDINGS = {
    "01_scale_to_zero_timeout.ipynb": ["steady: never suspending costs", "office hours:"],
    "02_sizing_connections.ipynb": ["Erlang-B", "Erlang-C", "smallest size refusing"],
    "03_month_forecast.ipynb": ["CU-hours, cost", "peak computes on"],
    "04_recommend_settings.ipynb": ["saving", "busy: recommended", "office: recommended",
                                    "hobby: recommended", "binding:"],
}


@pytest.fixture(scope="session")
def kernel_name() -> str:
    """python3, installed into this environment when no kernelspec of that name exists."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix"],
                       check=True, capture_output=True, timeout=120)
    return "python3"


def test_every_notebook_is_listed() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(FINDINGS)


def test_notebooks_are_stored_built_and_stripped() -> None:
    import nbformat

    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import build_notebooks
    finally:
        sys.path.remove(str(NOTEBOOKS))
    for name, built in build_notebooks.NOTEBOOKS.items():
        stored = nbformat.read(NOTEBOOKS / name, as_version=4)
        assert stored == built, f"{name} differs from build_notebooks.py: rebuild it"
        for cell in stored.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None
        tags = [c.metadata.get("tags", []) for c in stored.cells]
        assert sum("parameters" in t for t in tags) == 1
        sources = "\n".join(c.source for c in stored.cells if c.cell_type == "code")
        assert "import sim" in sources and "from sim." not in sources  # the public library


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_notebook_runs_with_small_parameters(name: str, kernel_name: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("SIM_NOTEBOOK_SMALL", "1")
    # the kernel imports this checkout of sim, whatever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name=kernel_name,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 1
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    for words in FINDINGS[name]:
        assert words in printed, (words, printed)
    assert not re.search(r"\bnan\b", printed, re.I)  # every finding has a value
