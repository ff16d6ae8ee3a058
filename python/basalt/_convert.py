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


def _unscaled_fits(precision) -> int:
    """The most digits an unscaled value of DECIMAL(precision, s) may have (64 bits: 19)."""
    return 19 if precision is None else min(precision, 19)


def decimal_to_unscaled(value, scale: int, precision=None):
    """The unscaled int of `value` (Decimal or int) at `scale`, or a str saying why not.

    With `precision`, a value with more digits than DECIMAL(precision, scale) (or 64 bits)
    holds is refused from its exponent before any arithmetic: Decimal('1E1000000000') would
    otherwise compute 10**1000000000. Values within the digit count are range-checked by the
    caller.
    """
    if isinstance(value, int):
        return value * 10 ** scale  # The int exists already: this costs no more than it.
    if not value.is_finite():
        return f"value {value} is not finite"
    # Exact arithmetic on the digits: Decimal operations round to the context's 28 digits.
    sign, digits, exponent = value.as_tuple()
    exponent += scale
    magnitude = int("".join(map(str, digits)) or "0")
    if magnitude == 0:
        return 0
    if exponent >= 0:
        if len(digits) + exponent > _unscaled_fits(precision):  # Digits of the result.
            where = "a 64-bit unscaled value" if precision is None else (
                f"DECIMAL({precision}, {scale})" +
                ("" if precision <= 18 else " as a 64-bit unscaled value"))
            return f"value {value} does not fit {where}"
        magnitude *= 10 ** exponent
    else:
        # 0 < magnitude < 10**len(digits): a larger power of ten cannot divide it.
        rest = 1 if -exponent > len(digits) else None
        if rest is None:
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
