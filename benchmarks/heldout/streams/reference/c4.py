def get_float(config: dict[str, str], key: str) -> float:
    """The value of `key` in `config` as a float.

    Raises:
        KeyError: `key` is not in `config`.
        ValueError: the value is not a number.
    """
    return float(config[key])
