"""Reference for h-calendar: one day's events, overlaps refused, free slots listed."""

DAY = 1440


class OverlapError(ValueError):
    """An event overlaps one already recorded."""


class EventCalendar:
    """Events of one day as half-open minute intervals [start, end) that never overlap."""

    def __init__(self) -> None:
        self._events: list[tuple[int, int, str]] = []

    def add(self, title: str, start: int, end: int) -> None:
        """Record an event; ValueError for a bad range, OverlapError for a clash."""
        if self.conflicts(start, end):
            raise OverlapError(f"{title!r} overlaps {self.conflicts(start, end)}")
        self._events.append((start, end, title))
        self._events.sort()

    def conflicts(self, start: int, end: int) -> list[str]:
        """Titles of the events overlapping [start, end), by start time."""
        _check_range(start, end)
        return [title for s, e, title in self._events if s < end and start < e]

    def events(self) -> list[tuple[str, int, int]]:
        """Every event as (title, start, end), by start time."""
        return [(title, s, e) for s, e, title in self._events]

    def free_slots(self, min_length: int = 1) -> list[tuple[int, int]]:
        """Uncovered gaps of the day at least min_length minutes long, in time order."""
        if min_length < 1:
            raise ValueError(f"min_length must be at least 1, not {min_length}")
        slots = []
        free_from = 0
        for s, e, _ in [*self._events, (DAY, DAY, "")]:
            if s - free_from >= min_length:
                slots.append((free_from, s))
            free_from = e
        return slots


def _check_range(start: int, end: int) -> None:
    """ValueError unless 0 <= start < end <= 1440."""
    if start < 0 or end > DAY or end <= start:
        raise ValueError(f"not a range within the day: [{start}, {end})")
