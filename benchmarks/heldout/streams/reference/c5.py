def get_choice(config: dict[str, str], key: str, choices: list[str]) -> str:
    """The value of `key` in `config`, which must be one of `choices`.

    Raises:
        KeyError: `key` is not in `config`.
        ValueError: the value is not one of `choices`.
    """
    value = config[key]
    if value not in choices:
        raise ValueError(f"{key}: {value!r} is not one of {choices}")
    return value
