import math


def sphere_volume(radius: float) -> float:
    """The volume of a sphere of the given radius."""
    return round(4 / 3 * math.pi * radius**3, 3)
