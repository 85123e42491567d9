"""The graph's nodes for a run on a project (``Context.repo``): plan, edit, prove on its suite.

The same planner → executor → reflector flow as a new package, with what changes inside an
existing project: the planner locates what to change and runs the project's test suite once
before any change (the baseline); the executor writes the new definition of the step's target
into a copy of its file in the attempt's staging area; the reflector applies it in the run's
checkout, runs the step's checks and the project's suite, and commits on the run's branch only
when no test that passed in the baseline fails (the regression gate).
"""

from .executor import make_project_executor
from .planner import make_project_planner
from .reflector import make_project_reflector

__all__ = ["make_project_executor", "make_project_planner", "make_project_reflector"]
