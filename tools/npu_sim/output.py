"""Collected output of one simulated command: stdout lines, stderr lines, exit code."""


class Result:
    """What a command prints and returns. ``rc`` is the internal code; the process exits with rc & 0xFF."""

    def __init__(self):
        self.out = []
        self.err = []
        self.rc = 0

    def o(self, text=""):
        self.out.append(text + "\n")
        return self

    def raw(self, text):
        self.out.append(text)
        return self

    def e(self, text=""):
        self.err.append(text + "\n")
        return self

    def fail(self, rc):
        self.rc = rc
        return self

    @property
    def stdout(self):
        return "".join(self.out)

    @property
    def stderr(self):
        return "".join(self.err)

    @property
    def exit_code(self):
        return self.rc & 0xFF
