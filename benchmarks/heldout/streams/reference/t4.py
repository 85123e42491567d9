class TextTypeError(TypeError):
    """An argument of the wrong type."""


def normalize_spaces(text: str) -> str:
    if not isinstance(text, str):
        raise TextTypeError("text must be a str")
    return " ".join(text.split())
