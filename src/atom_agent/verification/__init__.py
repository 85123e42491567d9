"""Verification: what a task states, as executed checks, and the commit rule over their results.

``clauses`` splits a task into clauses and gives each the checks that execute it (signatures,
examples, errors, properties, scenarios); ``decide`` is the commit rule as one pure function.
"""
