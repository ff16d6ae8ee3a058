"""Exceptions raised by the Basalt client.

Every error the cluster or the client library reports is a :class:`BasaltError`; the subclass
tells the status code (the C++ client's ``absl::Status``):

==========================  =====================  ========================================
absl status code            exception              typical cause
==========================  =====================  ========================================
NOT_FOUND                   NotFound               unknown table, row to update/delete absent
ALREADY_EXISTS              AlreadyPresent         table exists, duplicate primary key
INVALID_ARGUMENT            InvalidArgument        bad schema, bad value, unknown column
DEADLINE_EXCEEDED           TimedOut               an operation's timeout ran out
FAILED_PRECONDITION         IllegalState           wrong call order (flush mode with pending ops)
UNAVAILABLE                 ServiceUnavailable     no leader, server down or overloaded
UNIMPLEMENTED               NotSupported           a feature the cluster lacks
DATA_LOSS                   Corruption             malformed data on disk or on the wire
OUT_OF_RANGE                OutOfRange             value outside a type's range (aggregates)
RESOURCE_EXHAUSTED          ResourceExhausted      the session's mutation buffer is full
ABORTED, CANCELLED          Aborted                operation aborted
PERMISSION_DENIED,          NotAuthorized          not allowed
UNAUTHENTICATED
INTERNAL                    InternalError          a bug in Basalt
UNKNOWN and others          BasaltError            e.g. "some operations failed" from flush()
==========================  =====================  ========================================

Bad input found by the Python client before anything is sent is an :class:`InvalidArgument`
(also a ``ValueError``) naming the column, and the row for the columnar calls; a value of the wrong
Python type is :class:`InvalidType`, a subclass of both ``InvalidArgument`` and ``TypeError``.
"""


class BasaltError(Exception):
    """Base class of every Basalt error. ``code`` is the absl status code name."""

    code = "UNKNOWN"


class NotFound(BasaltError, LookupError):
    code = "NOT_FOUND"


class AlreadyPresent(BasaltError):
    code = "ALREADY_EXISTS"


class InvalidArgument(BasaltError, ValueError):
    code = "INVALID_ARGUMENT"


class InvalidType(InvalidArgument, TypeError):
    """A Python value of a type the column cannot take (a ``str`` for an INT32 column)."""


class TimedOut(BasaltError, TimeoutError):
    code = "DEADLINE_EXCEEDED"


class IllegalState(BasaltError):
    code = "FAILED_PRECONDITION"


class ServiceUnavailable(BasaltError):
    code = "UNAVAILABLE"


class NotSupported(BasaltError):
    code = "UNIMPLEMENTED"


class Corruption(BasaltError):
    code = "DATA_LOSS"


class OutOfRange(BasaltError):
    code = "OUT_OF_RANGE"


class ResourceExhausted(BasaltError):
    code = "RESOURCE_EXHAUSTED"


class Aborted(BasaltError):
    code = "ABORTED"


class NotAuthorized(BasaltError):
    code = "PERMISSION_DENIED"


class InternalError(BasaltError):
    code = "INTERNAL"


# absl::StatusCode name -> exception class; _basalt raises through this map.
STATUS_CODE_TO_EXCEPTION = {
    "NOT_FOUND": NotFound,
    "ALREADY_EXISTS": AlreadyPresent,
    "INVALID_ARGUMENT": InvalidArgument,
    "DEADLINE_EXCEEDED": TimedOut,
    "FAILED_PRECONDITION": IllegalState,
    "UNAVAILABLE": ServiceUnavailable,
    "UNIMPLEMENTED": NotSupported,
    "DATA_LOSS": Corruption,
    "OUT_OF_RANGE": OutOfRange,
    "RESOURCE_EXHAUSTED": ResourceExhausted,
    "ABORTED": Aborted,
    "CANCELLED": Aborted,
    "PERMISSION_DENIED": NotAuthorized,
    "UNAUTHENTICATED": NotAuthorized,
    "INTERNAL": InternalError,
}

__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and issubclass(value, BasaltError)]
