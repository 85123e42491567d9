"""The reflector node: gather executed evidence, decide (``verification.decide``), record."""

from .node import make_reflector

__all__ = ["make_reflector"]
