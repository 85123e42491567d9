"""Evaluations of atom_agent against public benchmarks."""
