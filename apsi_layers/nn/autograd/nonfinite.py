"""The error for NaN or infinite numbers found while differentiating or updating parameters.

A class of its own so fit's loops recognise it by type (they name the epoch and step and advise),
never by the words of a message."""

from apsi_lang.errors import ApsiError


class NonFiniteError(ApsiError):
    """A loss, a gradient or a parameter holds NaN or an infinite value."""
