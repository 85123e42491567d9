def get_list(config: dict[str, str], key: str, sep: str = ",") -> list[str]:
    """The value of `key` in `config` split at `sep`, items stripped, empty ones dropped.

    Examples:
        >>> get_list({"a": "x, y,,z"}, "a")
        ['x', 'y', 'z']
    """
    return [item.strip() for item in config[key].split(sep) if item.strip()]
