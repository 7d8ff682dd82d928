"""What the tests share: helpers and fixtures, one module per concern.

Importable as ``support`` because pyproject.toml puts tests/ on the path
(``pythonpath``); the conftest files import the fixtures that several
folders use, so a test module imports helpers, never another test module.
"""
