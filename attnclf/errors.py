class AttnclfError(ValueError):
    """A user error: bad config value, bad input file, missing data.

    The entry points print its message as one line and exit non-zero.
    """


class Interrupted(AttnclfError):
    """A run stopped from outside (Ctrl-C, SIGTERM from a scheduler): one line, and the exit status a shell
    gives a process killed by that signal (128 + its number), never 0, so that a scheduler sees no success."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.status = 128 + signal_number


class Terminated(BaseException):
    """SIGTERM outside the fit (data work, word vectors, the test after it), raised where the process is, as
    Ctrl-C raises KeyboardInterrupt: the stack unwinds (temporary files removed, workers stopped) and the
    command says one line. A BaseException, so that no `except Exception` takes it for a failure."""
