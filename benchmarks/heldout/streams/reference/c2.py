def get_bool(config: dict[str, str], key: str) -> bool:
    """The value of `key` in `config` as a bool ('true'/'yes'/'1' or 'false'/'no'/'0').

    Examples:
        >>> get_bool({"a": "Yes"}, "a")
        True
    """
    value = config[key].strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise ValueError(f"{key}: not a boolean: {config[key]!r}")
