"""Choosing a step's code: the candidates written for it, and one order of them by execution.

The only place that makes, ranks and keeps candidates, for module steps and project edits
alike. ``rank`` is that order (the task's checks, the tests kept, all checks); ``pool`` is the
pool the nodes offer code to (from named sources, proved as it comes, one kept and why);
``drafts`` writes an attempt's candidates (draft, witnesses); ``candidates`` is candidate zero
(the plain answer) and its whole-task samples.
"""
