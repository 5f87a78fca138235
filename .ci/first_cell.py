# Set-up where minivit is not installed (Colab, a fresh kernel): install the course from its repository and prepare
# the data. Where minivit imports (make lab, a clone with PYTHONPATH) this cell does nothing and prints nothing.
MINIVIT_REPO = "https://github.com/OWNER/minivit"  # the course's GitHub repository (OWNER: a placeholder until set)
import importlib, importlib.util, subprocess, sys
class SetupStop(Exception):
    def _render_traceback_(self):  # Jupyter shows this sentence alone instead of a traceback
        return [str(self)]
if importlib.util.find_spec("minivit") is None:
    if "/OWNER/" in MINIVIT_REPO:  # not set: say so now, not in a page of pip and git errors
        raise SetupStop(f"MINIVIT_REPO is still the placeholder {MINIVIT_REPO}: set MINIVIT_REPO at the top of this "
                        "cell to the course's GitHub repository (https://github.com/<owner>/minivit) and run it "
                        "again (for every notebook at once: set it in .ci/first_cell.py and run "
                        "python .ci/sync_first_cell.py).")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", f"git+{MINIVIT_REPO}"], check=True)
    importlib.invalidate_caches()  # so that this kernel finds the package just installed
    subprocess.run([sys.executable, "-m", "minivit.data", "prepare"], check=True)
