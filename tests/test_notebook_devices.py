"""Every notebook's own cells run with a stand-in for CUDA, so a CPU tensor fed to a model on the GPU fails here.

The notebooks run in this process, cell by cell from their JSON (not copies of their code), in the quick profile's
smoke run (`minivit.smoke`: a sliver of the data, at most 2 epochs), with `profile.device` = "cuda" played by
`tests/cuda_standin.py`: CPU tensors that report `cuda:0` and obey CUDA's device rules, so a model moved to the
device and fed a CPU tensor raises as on a GPU, while values, prints, asserts and plots run for real. Models
train into a temporary checkpoint folder, never the course's.

The mutation tests put back, in temporary copies of the notebooks, device bugs the course had or could have
(issue 22, `../shared/reviews/full-profile-audit-2.md` F5) and check that the run fails with CUDA's error.
"""

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch

import minivit.profile
import minivit.recipes
from minivit import smoke
from minivit.data import data_root
from tests.cuda_standin import standin_cuda

# An integration test (`make integration`; `make unit` leaves it out): it runs every notebook, cell by cell.
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PREPARED = ("cifar10", "fashion-mnist", "imagenette")  # the data sets the notebooks load
# A thinner sliver than the smoke run's (values do not matter here, only which device each tensor is on)
SLIVER = dict(TRAIN_PER_CLASS=20, TEST_PER_CLASS=4, MAX_EPOCHS=1, MAX_BATCH=16)


def code_cells(path: Path) -> list[tuple[int, str]]:
    """(cell index, source) of every code cell of a notebook, in order."""
    cells = json.loads(path.read_text())["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]


def run_notebook(path: Path, checkpoints: Path, monkeypatch, mutants: dict[int, str] | None = None) -> dict:
    """Run every code cell of `path` in one namespace, with CUDA played by the stand-in (see the module docstring).
    A cell that raises fails the run, with the notebook and cell named. `mutants` ({cell index: another source})
    run first, each in a copy of the namespace at that cell; what each raised (or None) is returned."""
    monkeypatch.setenv("MINIVIT_PROFILE", "quick")
    monkeypatch.setenv("MINIVIT_SMOKE", "1")
    for name, value in SLIVER.items():
        monkeypatch.setattr(smoke, name, value)
    monkeypatch.setattr(minivit.profile, "default_device", lambda: torch.device("cuda"))
    monkeypatch.setattr(minivit.recipes, "checkpoint_dir", lambda: checkpoints)
    monkeypatch.setattr(plt, "show", lambda *a, **k: plt.close("all"))
    monkeypatch.chdir(path.parent)  # where Jupyter runs a notebook
    checkpoints.mkdir(parents=True, exist_ok=True)
    namespace, raised = {"__name__": "__main__"}, {}
    with torch.random.fork_rng(), standin_cuda():
        for index, source in code_cells(path):
            if index in (mutants or {}):
                raised[index] = _run(f"{path.name} (mutated)", index, mutants[index], dict(namespace), expect=True)
            _run(path.name, index, source, namespace)
    return raised


def _run(name: str, index: int, source: str, namespace: dict, expect: bool = False):
    try:
        exec(compile(source, f"{name}, cell {index}", "exec"), namespace)  # noqa: S102
    except Exception as e:
        if expect:
            return e
        raise NotebookFailed(name, index, e) from e
    finally:
        plt.close("all")
    return None


class NotebookFailed(AssertionError):
    def __init__(self, notebook: str, cell: int, error: Exception):
        super().__init__(f"{notebook} cell {cell} raised {type(error).__name__}: {error}")
        self.notebook, self.cell, self.error = notebook, cell, error


@pytest.mark.filterwarnings("ignore")
def test_the_standin_obeys_cudas_device_rules():
    from minivit import ViT
    from tests.conftest import TINY
    model = ViT(TINY)
    with standin_cuda():
        model.to("cuda")
        x = torch.zeros(2, 3, 8, 8)
        with pytest.raises(RuntimeError, match=DEVICE_ERROR):
            model(x)  # CPU input, CUDA weights
        out = model(x.to("cuda"))
        assert out.device == torch.device("cuda", 0) and out.cpu().device.type == "cpu"
        with pytest.raises(RuntimeError, match=DEVICE_ERROR):
            out + torch.ones(2, 3)  # any operation mixing the two
        assert (out + torch.tensor(1.0)).device.type == "cuda"  # a CPU scalar is allowed, as on CUDA
        with pytest.raises(RuntimeError, match=DEVICE_ERROR):
            torch.rand(2, 3, device="cuda", generator=torch.Generator().manual_seed(0))  # CPU generator, CUDA draw
        assert torch.rand(2, device="cuda", generator=torch.Generator("cuda").manual_seed(0)).device.type == "cuda"
        with pytest.raises(TypeError, match="cuda:0 device type tensor to numpy"):
            out.detach().numpy()
        meta = torch.empty_like(out, device="meta")  # asked for another device: not on CUDA, as on a GPU
        assert meta.device.type == "meta" and (meta + torch.empty(2, 3, device="meta")).device.type == "meta"
        loss = out.logsumexp(-1).mean()
        loss.backward()  # gradients and an optimizer step stay on the device
        torch.optim.AdamW(model.parameters()).step()
        assert {p.grad.device.type for p in model.parameters()} == {"cuda"}
    assert model(torch.zeros(2, 3, 8, 8)).shape == (2, 3)  # outside, a plain CPU model again


def _prepared() -> bool:
    """The data sets are on this machine (the notebooks' smoke run must not download them)."""
    root = data_root()
    return all(any(root.glob(f"{name}*")) for name in PREPARED)


needs_data = pytest.mark.skipif(not _prepared(), reason="the prepared data sets are not here (make data)")
DEVICE_ERROR = r"Expected all tensors to be on the same device|device type for generator"

# Device bugs put back into temporary copies of the notebooks: (notebook, cell text, the text instead, what it is)
MUTATIONS = {
    "06_hybrid": [("normalize(image[None], \"cifar10\").to(next(backbone.parameters()).device)",
                   "normalize(image[None], \"cifar10\")", "stage_maps without .to(...): the original crash")],
    "08_inspecting_vit": [("x = prep(images.to(device))  # (B, C, H, W)", "x = prep(images)  # (B, C, H, W)",
                           "keep_patches' input left on the CPU")],
    "04_training_a_vit": [("normalize(test.images[:256], \"cifar10\").to(device)",
                           "normalize(test.images[:256], \"cifar10\")", "cell 12's batch x_b left on the CPU")],
    "09_masked_patch_prediction": [
        ("o = mpp.eval()(normalize(test.images[idx], \"cifar10\").to(dev)",
         "o = mpp.eval()(normalize(test.images[idx], \"cifar10\")", "the shown images left on the CPU"),
        # a CPU generator is no bug here: minivit.mpp.corrupt_patches draws on the generator's device and moves
        # the result (on CUDA too); the copy must run (None: nothing raised)
        ("generator=torch.Generator(dev).manual_seed(0))", "generator=torch.Generator().manual_seed(0))", None)],
}


def mutated_copy(path: Path, folder: Path) -> tuple[Path, dict[int, tuple[str, str | None]]]:
    """A copy of the notebook in `folder` with `MUTATIONS` applied; {cell index: (mutated source, what)}."""
    nb = json.loads(path.read_text())
    cells = {}
    for old, new, what in MUTATIONS.get(path.stem, []):
        hits = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and old in "".join(c["source"])]
        assert len(hits) == 1, f"{path.name}: the mutation's text {old!r} is in {len(hits)} cells, not 1"
        source = "".join(nb["cells"][hits[0]]["source"]).replace(old, new)
        nb["cells"][hits[0]]["source"] = source.splitlines(keepends=True)
        cells[hits[0]] = (source, what)
    copy = folder / path.name
    copy.write_text(json.dumps(nb))
    return copy, cells


def _skip_without_the_notebooks_imports(path) -> None:
    """Skip, naming the package, when the notebook imports one that is not installed (the notebooks need the [dev]
    extra, e.g. scikit-image for 01's photograph and scipy for 07's and 09's references)."""
    import importlib.util
    text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    for name in sorted(set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", text, re.M))):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{path.name} imports {name}, which is not installed (the notebooks need minivit[dev])")


@needs_data
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_with_cuda_played_by_the_cpu(path, tmp_path, monkeypatch):
    """Every cell of the notebook runs with the model on "cuda"; each mutation of it, run at its cell in a copy of
    the namespace, raises CUDA's device error (or, where it is no bug, nothing)."""
    _skip_without_the_notebooks_imports(path)
    copy, mutated = mutated_copy(path, tmp_path)
    mutants = {i: "".join(c["source"]) for i, c in enumerate(json.loads(copy.read_text())["cells"]) if i in mutated}
    raised = run_notebook(path, tmp_path / "checkpoints", monkeypatch, mutants)
    for index, (_, what) in mutated.items():
        error = raised[index]
        if what is None:
            assert error is None, f"cell {index}: {type(error).__name__}: {error}"
        else:
            assert isinstance(error, RuntimeError) and re.search(DEVICE_ERROR, str(error)), \
                f"{what} (cell {index}) was not caught: {error!r}"


@needs_data
@pytest.mark.filterwarnings("ignore")
def test_a_mutated_copy_fails_its_run(tmp_path, monkeypatch):
    # end to end: the copy of 04 with cell 12's batch on the CPU fails at that cell, with CUDA's message
    copy, mutated = mutated_copy(ROOT / "notebooks" / "04_training_a_vit.ipynb", tmp_path)
    with pytest.raises(NotebookFailed, match=DEVICE_ERROR) as failed:
        run_notebook(copy, tmp_path / "checkpoints", monkeypatch)
    assert failed.value.cell == next(iter(mutated))
