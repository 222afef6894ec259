"""What a scenario records: its named checks and figures, and the failure that stops it."""


class Fail(Exception):
    """A required check failed; the scenario stops."""


class Ctx:
    """Checks and figures of one scenario."""

    def __init__(self, say):
        self.say = say
        self.checks = []
        self.figures = []

    def check(self, ok, text):
        ok = bool(ok)
        self.checks.append((ok, text))
        self.say("    %s %s" % ("ok  " if ok else "FAIL", text))
        return ok

    def require(self, ok, text):
        if not self.check(ok, text):
            raise Fail(text)

    def fig(self, key, value):
        self.figures.append((key, value))
        self.say("    ..  %s = %s" % (key, value))

    def note(self, text):
        self.say("    ..  " + text)

    def passed(self):
        return bool(self.checks) and all(ok for ok, _ in self.checks)
