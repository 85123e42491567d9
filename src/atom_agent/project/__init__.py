"""Work inside an existing project: its checkout, map, test suite and edits."""
