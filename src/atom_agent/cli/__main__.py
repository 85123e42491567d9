"""`python -m atom_agent.cli`."""

from atom_agent.cli import entry

entry()
