"""The public API: every exported name exists, and importing prints nothing and seeds nothing."""

import subprocess
import sys

import minivit


def test_all_exports_exist():
    missing = [n for n in minivit.__all__ if not hasattr(minivit, n)]
    assert not missing and len(set(minivit.__all__)) == len(minivit.__all__)
    for name in ("ViT", "ViTConfig", "patchify", "resize_pos_embed", "fit", "get_profile"):
        assert name in minivit.__all__


def test_import_has_no_side_effects():
    code = (
        "import torch; s = torch.random.get_rng_state().clone(); "
        "import minivit, minivit.data, minivit.viz, minivit.cli; "
        "assert torch.equal(s, torch.random.get_rng_state()), 'import changed the RNG'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "", f"import printed {out.stdout!r}"


def test_command_line_modules_run_once():
    """`python -m minivit.data` / `-m minivit.train` must not be imported by the package first (runpy warns)."""
    for module in ("minivit.data", "minivit.train"):
        out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "usage:" in out.stdout


def test_import_is_light_and_lazy_names_load_on_use():
    code = ("import sys, minivit; assert 'torchvision' not in sys.modules, 'import minivit imported torchvision'; "
            "assert minivit.CifarResNet.__module__ == 'minivit.cnn' and minivit.recipes.__name__ == 'minivit.recipes'; "
            "assert 'torchvision' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
