"""Errors the CLI turns into exit status 2 with a message naming the file and key."""


class CaptureError(Exception):
    """Bad input or a model the capture cannot handle; str() is the whole message."""

    def __init__(self, message, file=None, key=None):
        self.file = file
        self.key = key
        where = ""
        if file and key:
            where = f"{file}: key '{key}': "
        elif file:
            where = f"{file}: "
        elif key:
            where = f"key '{key}': "
        super().__init__(where + message)
