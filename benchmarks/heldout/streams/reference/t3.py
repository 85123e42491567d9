def truncate(text: str, width: int) -> str:
    if not isinstance(text, str) or not isinstance(width, int):
        raise TypeError("text must be a str and width an int")
    if width < 3:
        raise ValueError("width must be at least 3")
    return text if len(text) <= width else text[: width - 3] + "..."
