"""Reference for h-csvline: one CSV line split into fields, quotes honoured."""

QUOTE = '"'


def split_csv_line(line: str, sep: str = ",") -> list[str]:
    """The fields of line; ValueError for malformed quoting or an unusable separator."""
    if len(sep) != 1 or sep == QUOTE:
        raise ValueError(f"separator must be one character other than a quote: {sep!r}")
    fields = []
    at = 0
    while True:
        if line.startswith(QUOTE, at):
            field, at = _quoted(line, at + 1)
        else:
            field, at = _unquoted(line, at, sep)
        fields.append(field)
        if at == len(line):
            return fields
        if line[at] != sep:
            raise ValueError(f"text after a closing quote at {at}")
        at += 1


def _unquoted(line: str, at: int, sep: str) -> tuple[str, int]:
    """The unquoted field starting at `at`, and where it ends."""
    end = line.find(sep, at)
    end = len(line) if end < 0 else end
    field = line[at:end]
    if QUOTE in field:
        raise ValueError(f"a quote inside an unquoted field: {field!r}")
    return field, end


def _quoted(line: str, at: int) -> tuple[str, int]:
    """The quoted field whose text starts at `at`, and the index after its closing quote."""
    pieces = []
    while True:
        close = line.find(QUOTE, at)
        if close < 0:
            raise ValueError("a quoted field with no closing quote")
        pieces.append(line[at:close])
        if not line.startswith(QUOTE, close + 1):
            return "".join(pieces), close + 1
        pieces.append(QUOTE)
        at = close + 2
