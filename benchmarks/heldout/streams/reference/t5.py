class TextTypeError(TypeError):
    """An argument of the wrong type."""


def count_vowels(text: str) -> dict[str, int]:
    if not isinstance(text, str):
        raise TextTypeError("text must be a str")
    counts: dict[str, int] = {}
    for char in text.lower():
        if char in "aeiou":
            counts[char] = counts.get(char, 0) + 1
    return counts
