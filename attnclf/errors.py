class AttnclfError(ValueError):
    """A user error: bad config value, bad input file, missing data.

    The entry points print its message as one line and exit non-zero.
    """
