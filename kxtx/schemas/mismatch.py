"""The one error of every codec (kxtx.schemas.codecs, kxtx.schemas.protocodec), below them both."""


class Mismatch(ValueError):
    """An object that does not fit the schema, or bytes that are not a record of it."""
