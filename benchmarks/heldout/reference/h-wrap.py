"""Reference for h-wrap: greedy word wrapping to a width."""


def wrap_words(text: str, width: int) -> list[str]:
    """Lines of at most width characters; a longer word stands alone, unbroken."""
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) <= width:
            line += " " + word
            continue
        if line:
            lines.append(line)
        line = word
    if line:
        lines.append(line)
    return lines
