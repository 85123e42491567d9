"""`python -m atom_agent.cli`."""

import sys

from atom_agent.cli import main

sys.exit(main())
