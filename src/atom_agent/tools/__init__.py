"""The agent's tools: plain LangChain tools that read their attempt from the run's context.

``scope`` (where an attempt may read and write; the model's paths checked), ``confine``
(opening paths through directory fds), ``files`` (read/write/edit/list), ``code`` (run_python,
run_tests in the sandbox), ``search`` (search_files, search_memory), ``memory``
(remember, recall, forget), ``context`` (``ToolContext``: what a call reads from its run),
``results`` (the JSON results and the one invalid-arguments message) and ``calls`` (every
call's telemetry and error results: the ``ToolCalls`` middleware).
Import the submodules directly; this package imports nothing.
"""
