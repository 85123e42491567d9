def polygon_perimeter(sides: list[float]) -> float:
    """The sum of the side lengths."""
    return round(float(sum(sides)), 3)
