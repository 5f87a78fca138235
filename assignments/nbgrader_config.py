# nbgrader's configuration of the minivit assignment kit: this folder is the course directory (tooling).
#   source/<assignment>/<assignment>.ipynb   the instructor's versions, with solutions and tests (committed)
#   release/, submitted/, autograded/, feedback/, gradebook.db   what nbgrader writes (ignored by git)
# Run nbgrader inside this folder (the course root is the working directory): `make assignments` (or
# `nbgrader generate_assignment NAME` here) writes the students' versions to release/.
c = get_config()  # noqa: F821 (nbgrader's config loader provides it)

c.CourseDirectory.course_id = "minivit"
# Each assignment runs in well under 3 CPU-minutes; a cell that runs longer than this when autograded is stuck.
c.ExecutePreprocessor.timeout = 300
# The written answers' stub, and the code cells' (nbgrader's defaults, spelled out for instructors who change them).
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Every kernel nbgrader starts (to validate, to autograde) loads minivit's grading keeper, an IPython extension that
# refuses every cell after an answer cell that changed the kernel's input transformers, the set-up cell's names or
# the checks' references (minivit/grading_kernel.py). `python -m minivit.autograde` passes it to its sandboxed
# kernels too.
c.ExecutePreprocessor.extra_arguments = ["--IPKernelApp.extensions=minivit.grading_kernel"]

# Feedback without the hidden tests: nbgrader's default preprocessors (GetGrades, CSSHTMLHeaderPreprocessor) with two
# between them. ClearHiddenTests removes each test cell's BEGIN/END HIDDEN TESTS region from the feedback; before it,
# _HiddenTestFrames cuts a failed test cell's own frames in its traceback to their first line (`Cell In[n], line k`),
# since IPython shows the lines around the one that failed, hidden ones included. What the tests printed stays, and
# so does each error's last line (a check's message), which can name hidden cases (docs/instructors.md).
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor as _CSSHTMLHeader, Preprocessor as _Preprocessor
from nbgrader.preprocessors import ClearHiddenTests as _ClearHiddenTests, GetGrades as _GetGrades
import re as _re
from traitlets import Bool as _Bool


class _HiddenTestFrames(_Preprocessor):
    """In a test cell that holds hidden tests, each traceback frame of the cell itself, or that shows a hidden line
    or marker, is cut to its first line. The frames of other code (the student's answer, the package) stay."""

    enabled = _Bool(True)  # nbconvert's preprocessors are off unless enabled

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or "### BEGIN HIDDEN TESTS" not in cell.source:
            return cell, resources
        hidden, inside = ["HIDDEN TESTS"], False
        for line in cell.source.splitlines():
            inside = (inside or "BEGIN HIDDEN TESTS" in line) and "END HIDDEN TESTS" not in line
            if inside and len(line.strip()) >= 10:
                hidden.append(line.strip())
        own = _re.compile(rf"(Cell In ?\[{cell.execution_count}\]|Input In ?\[{cell.execution_count}\])")
        note = "  (the test cell's lines are not shown: it holds hidden tests)"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                frames = []
                for frame in output.get("traceback", []):
                    plain = _re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", frame)
                    if own.match(plain) or any(line in plain for line in hidden):
                        frame = frame.splitlines()[0] + note
                    frames.append(frame)
                output["traceback"] = frames
        return cell, resources


c.GenerateFeedback.preprocessors = [_GetGrades, _HiddenTestFrames, _ClearHiddenTests, _CSSHTMLHeader]
# `nbgrader zip_collect NAME`: the files downloaded from a learning platform go in downloaded/NAME/archive/, each
# notebook named STUDENT_NOTEBOOK.ipynb (alice_a_patches_and_attention.ipynb: a student id without "_", then the
# released notebook's name), alone or inside .zip files; each goes to submitted/STUDENT/NAME/NOTEBOOK.ipynb. nbgrader
# matches the whole path of each extracted file, hence the leading folders.
c.FileNameCollectorPlugin.named_regexp = r".*[/\\](?P<student_id>[^/\\_]+)_(?P<file_id>[^/\\]+\.ipynb)$"

# --- Grading offline: MathJax from this machine, never from a CDN (tests/test_formgrader_offline.py) -------------
# nbgrader's Formgrader page and its feedback files call nbconvert's `mathjax()` macro with no URL, so they load
# MathJax 2.7.7 from cdnjs whatever HTMLExporter.mathjax_url says (offline: "MathJax is not defined", the score
# boxes stay empty and a manual score is not saved; the feedback's equations stay raw TeX). mathjax_templates/
# holds a `mathjax.html.j2` for each, found before nbconvert's:
#   formgrade/  MathJax 2 (formgrade.js calls MathJax.Hub) served by the Jupyter server (jupyter-server-mathjax)
#   feedback/   MathJax 3 written into each feedback file (django-static-mathjax's tex-svg-full.js, 2.3 MB), so
#               that the student's copy typesets offline wherever it is opened
# This list replaces nbgrader's, so it names nbgrader's own templates too.
import nbgrader as _nbgrader
from pathlib import Path as _Path

c.HTMLExporter.extra_template_basedirs = [
    str(_Path(__file__).resolve().parent / "mathjax_templates"),
    str(_Path(_nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]


def _mathjax3(name: str) -> str:
    """The text of one of MathJax 3's files (django-static-mathjax ships them), safe inside a <script> element.
    A Jinja filter (the feedback template's `minivit_mathjax3`): Jinja would read the file as a template if it
    were included. Being a function, it makes the Formgrader's configuration panel (Manage Assignments) show the
    configuration as text, not as JSON, with a warning in the server's log."""
    import mathjax  # django-static-mathjax: MathJax's own files under static/mathjax/es5

    text = (_Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / name).read_text(encoding="utf-8")
    return text.replace("</script", "<\\/script")


c.HTMLExporter.filters = {"minivit_mathjax3": _mathjax3}
# --- end of the offline MathJax block ---------------------------------------------------------------------------
