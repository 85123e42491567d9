import math


def circle_area(radius: float) -> float:
    """The area of a circle of the given radius."""
    if radius < 0:
        raise ValueError("radius must not be negative")
    return round(math.pi * radius**2, 2)
