import math


def rect_diagonal(width: float, height: float) -> float:
    """The length of the diagonal of a width by height rectangle."""
    return round(math.hypot(width, height), 2)
