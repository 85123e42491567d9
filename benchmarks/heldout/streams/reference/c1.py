def get_int(config: dict[str, str], key: str) -> int:
    """The value of `key` in `config` as an int.

    Examples:
        >>> get_int({"a": "5"}, "a")
        5
    """
    return int(config[key])
