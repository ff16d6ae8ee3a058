"""The status code -> exception map (basalt/errors.py)."""

import pytest

import basalt
from basalt import _basalt

MAP = [
    ("NOT_FOUND", basalt.NotFound),
    ("ALREADY_EXISTS", basalt.AlreadyPresent),
    ("INVALID_ARGUMENT", basalt.InvalidArgument),
    ("DEADLINE_EXCEEDED", basalt.TimedOut),
    ("FAILED_PRECONDITION", basalt.IllegalState),
    ("UNAVAILABLE", basalt.ServiceUnavailable),
    ("UNIMPLEMENTED", basalt.NotSupported),
    ("DATA_LOSS", basalt.Corruption),
    ("OUT_OF_RANGE", basalt.OutOfRange),
    ("RESOURCE_EXHAUSTED", basalt.ResourceExhausted),
    ("ABORTED", basalt.Aborted),
    ("CANCELLED", basalt.Aborted),
    ("PERMISSION_DENIED", basalt.NotAuthorized),
    ("INTERNAL", basalt.InternalError),
]


@pytest.mark.parametrize("code,cls", MAP)
def test_status_code_maps_to_exception(code, cls):
    with pytest.raises(cls, match="the message") as info:
        _basalt._raise_status(code, "the message")
    assert isinstance(info.value, basalt.BasaltError)
    assert type(info.value) is cls


def test_unmapped_code_is_the_base_class():
    with pytest.raises(basalt.BasaltError) as info:
        _basalt._raise_status("UNKNOWN", "x")
    assert type(info.value) is basalt.BasaltError


def test_python_base_classes():
    assert issubclass(basalt.InvalidArgument, ValueError)
    assert issubclass(basalt.InvalidType, TypeError)
    assert issubclass(basalt.InvalidType, basalt.InvalidArgument)
    assert issubclass(basalt.NotFound, LookupError)
    assert issubclass(basalt.TimedOut, TimeoutError)


def test_unreachable_master_times_out():
    c = basalt.connect("127.0.0.1:1", admin_timeout_ms=300)
    with pytest.raises((basalt.TimedOut, basalt.ServiceUnavailable)):
        c.list_tables()
