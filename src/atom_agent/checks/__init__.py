"""Static checks of generated code: syntax and stubs (tools)."""
