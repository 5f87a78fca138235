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
