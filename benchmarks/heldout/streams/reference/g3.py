import math


def triangle_area(a: float, b: float, c: float) -> float:
    """The area of the triangle with sides a, b and c (Heron's formula)."""
    if min(a, b, c) <= 0 or a + b <= c or a + c <= b or b + c <= a:
        raise ValueError("these sides form no triangle")
    s = (a + b + c) / 2
    return round(math.sqrt(s * (s - a) * (s - b) * (s - c)), 2)
