"""The executor: one attempt of one step (drafts first, or a ReAct loop steered by code).

``node`` (the graph node and its attempt flow), ``prompt`` (the tiered context of an attempt),
``tools`` (which tools its model gets), ``attempt`` (what an attempt passes to its agent) and
``steering/`` (one middleware per steering behaviour of the tool loop).
"""

from .node import DRAFTS_FILE, make_executor

__all__ = ["DRAFTS_FILE", "make_executor"]
