"""The executor's tools."""
