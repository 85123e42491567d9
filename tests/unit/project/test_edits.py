"""Splicing a model's definition into a file: methods stay methods, the rest stays byte-exact."""

from __future__ import annotations

import pytest

from atom_agent.project.edits import Edit, EditError, apply_edit, definition_of

SOURCE = '''\
import os


class Box:
    """A box."""

    def __init__(self, items):
        self.items = items

    @property
    def size(self):
        raise NotImplementedError

    def first(self):
        return self.items[0]


def helper(x):
    raise NotImplementedError
'''


def test_a_method_comes_back_indented_in_its_class_and_the_rest_is_unchanged() -> None:
    reply = "Here:\n```python\n@property\ndef size(self):\n    return len(self.items)\n```"
    out = apply_edit(SOURCE, Edit("Box.size", definition_of(reply, "Box.size")))
    assert "    @property\n    def size(self):\n        return len(self.items)\n" in out
    assert out.replace("return len(self.items)", "raise NotImplementedError") == SOURCE


def test_a_definition_inside_a_class_or_a_whole_module_is_found() -> None:
    reply = "```python\nimport os\n\nclass Box:\n    def size(self):\n        return 3\n```"
    assert definition_of(reply, "Box.size") == "def size(self):\n    return 3\n"
    module = "```python\nimport os\n\ndef other():\n    pass\n\ndef helper(x):\n    return x\n```"
    assert definition_of(module, "helper") == "def helper(x):\n    return x\n"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("no code here", "no code block"),
        ("```python\ndef helper(x:\n```", "does not parse"),
        ("```python\ndef other(x):\n    return 1\n```", "defines no `helper`"),
        ("```python\ndef helper(x):\n    # Implementation goes here\n    pass\n```", "no body"),
        ('```python\ndef helper(x):\n    """Doc."""\n    raise NotImplementedError\n```', "body"),
        ("```python\ndef helper(x):\n    ...\n```", "no body"),
    ],
)
def test_replies_that_cannot_be_an_edit_say_why(reply: str, message: str) -> None:
    with pytest.raises(EditError, match=message):
        definition_of(reply, "helper")


def test_a_function_the_file_does_not_define_is_added_at_its_end() -> None:
    out = apply_edit(SOURCE, Edit("tail", "def tail(xs):\n    return xs[-1]\n"))
    assert out == SOURCE + "\n\ndef tail(xs):\n    return xs[-1]\n"


def test_a_method_its_class_does_not_define_is_added_at_the_end_of_the_class() -> None:
    out = apply_edit(SOURCE, Edit("Box.last", "def last(self):\n    return self.items[-1]\n"))
    added = "        return self.items[0]\n\n    def last(self):\n        return self.items[-1]\n"
    assert added in out
    assert out.replace("\n    def last(self):\n        return self.items[-1]\n", "", 1) == SOURCE


def test_a_method_of_a_class_the_file_does_not_have_is_refused() -> None:
    with pytest.raises(EditError, match="`Crate` is not a class of the file"):
        apply_edit(SOURCE, Edit("Crate.open", "def open(self):\n    return 1\n"))
    with pytest.raises(EditError, match="does not parse"):
        apply_edit(SOURCE, Edit("tail", "def tail(xs):\n  return xs[\n"))


def test_a_body_without_its_docstring_keeps_the_docstring_the_definition_had() -> None:
    doc = '    """Twice x.\n\n    >>> f(2)\n    4\n    """\n'
    source = "def f(x):\n" + doc + "    raise NotImplementedError\n"
    out = apply_edit(source, Edit("f", "def f(x):\n    return 2 * x\n"))
    assert out == source.replace("raise NotImplementedError", "return 2 * x")
    method = "class A:\n    def g(self):\n        '''Doc.'''\n        return 0\n"
    out = apply_edit(method, Edit("A.g", "def g(self):\n    return 1\n"))
    assert out == "class A:\n    def g(self):\n        '''Doc.'''\n        return 1\n"
    # A docstring the model did write wins.
    out = apply_edit(method, Edit("A.g", "def g(self):\n    '''New.'''\n    return 1\n"))
    assert "'''New.'''" in out and "'''Doc.'''" not in out
    # A docstring the model cut short (the summary kept, the examples dropped) does not.
    short = 'def f(x):\n    """\n    Twice x.\n    """\n    # doubled\n    return 2 * x\n'
    out = apply_edit(source, Edit("f", short))
    assert out == source.replace("raise NotImplementedError", "# doubled\n    return 2 * x")
    longer = 'def f(x):\n    """Twice x, for ints and floats."""\n    return 2 * x\n'
    assert '"""Twice x, for ints and floats."""' in apply_edit(source, Edit("f", longer))
