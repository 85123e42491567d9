"""Reference for h-duration: durations such as '1h30m', parsed to seconds and formatted back."""

import re

UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_FORM = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")


def parse_duration(text: str) -> int:
    """Total seconds of a duration string; ValueError unless every character is a part of it."""
    match = _FORM.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"not a duration: {text!r}")
    numbers = match.groups()
    return sum(int(n) * size for n, (_, size) in zip(numbers, UNITS, strict=True) if n is not None)


def format_duration(seconds: int) -> str:
    """The canonical string: largest units first, zero parts left out, '0s' for zero."""
    if seconds < 0:
        raise ValueError(f"negative duration: {seconds}")
    parts = []
    for unit, size in UNITS:
        number, seconds = divmod(seconds, size)
        if number:
            parts.append(f"{number}{unit}")
    return "".join(parts) or "0s"
