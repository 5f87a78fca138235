# Set-up where minivit is not installed (Colab, a fresh kernel): install the course from its repository and prepare
# the data. Where minivit imports (make lab, a clone with PYTHONPATH) this cell does nothing and prints nothing.
MINIVIT_REPO = "https://github.com/OWNER/minivit"  # the course repository; a fork: README.md, "Colab"
import importlib, importlib.util, subprocess, sys
if importlib.util.find_spec("minivit") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", f"git+{MINIVIT_REPO}"], check=True)
    importlib.invalidate_caches()  # so that this kernel finds the package just installed
    subprocess.run([sys.executable, "-m", "minivit.data", "prepare"], check=True)
