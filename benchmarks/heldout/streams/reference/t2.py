def initials(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError("name must be a str")
    return "".join(word[0].upper() for word in name.split())
