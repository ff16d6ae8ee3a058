"""Conversions the C++ extension delegates to Python (datetime, date, Decimal).

UNIXTIME_MICROS is microseconds since the epoch, UTC: a naive datetime is taken as UTC, an aware
one is converted. DATE is days since 1970-01-01. DECIMAL values travel unscaled.
"""

import datetime as _dt
import decimal as _decimal

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_ONE_US = _dt.timedelta(microseconds=1)


def datetime_to_micros(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return (value - _EPOCH) // _ONE_US


def date_to_days(value: _dt.date) -> int:
    return value.toordinal() - _EPOCH_ORDINAL


def decimal_to_unscaled(value, scale: int):
    """The unscaled int of `value` (Decimal or int) at `scale`, or a str saying why not."""
    if isinstance(value, int):
        return value * 10 ** scale
    if not value.is_finite():
        return f"value {value} is not finite"
    # Exact arithmetic on the digits: Decimal operations round to the context's 28 digits.
    sign, digits, exponent = value.as_tuple()
    exponent += scale
    magnitude = int("".join(map(str, digits)) or "0")
    if exponent >= 0:
        magnitude *= 10 ** exponent
    else:
        magnitude, rest = divmod(magnitude, 10 ** -exponent)
        if rest:
            return f"value {value} has more than {scale} digits after the decimal point"
    return -magnitude if sign else magnitude


def micros_to_datetime(micros: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(microseconds=micros)


def days_to_date(days: int) -> _dt.date:
    return _dt.date.fromordinal(days + _EPOCH_ORDINAL)


def unscaled_to_decimal(unscaled: int, scale: int) -> _decimal.Decimal:
    sign, digits, exponent = _decimal.Decimal(unscaled).as_tuple()
    return _decimal.Decimal((sign, digits, exponent - scale))
