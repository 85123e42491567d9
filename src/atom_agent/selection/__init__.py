"""Choosing a step's code: the candidates written for it, and one order of them by execution.

``rank`` is that order (the task's checks, the tests kept, all checks); ``pool`` is an
attempt's candidates; ``drafts`` writes them (draft, witnesses); ``candidates`` is
candidate zero (the plain answer) and its whole-task samples.
"""
