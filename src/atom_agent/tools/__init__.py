"""The executor's tools.

``files`` (read/write/edit/list, confined to an attempt's scope), ``code`` (run_python,
run_tests in the sandbox), ``search`` (search_files, search_memory), ``memory`` (remember,
recall, forget) and ``router`` (the one entry point that routes and reports every call).
Import the submodules directly; this package imports nothing.
"""
