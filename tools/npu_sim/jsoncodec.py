"""JSON text of the simulator's files (the state, the fault counters, the call log) without the json package.

``loads`` and ``dumps`` answer exactly as ``json.loads`` and ``json.dumps`` (default separators, ASCII only,
keys in their order); docs/simulator-cost.md says why.
"""

import math

# ``import json`` costs about as much CPU as the interpreter's own start (it imports re); every call reads the
# state, so the C scanner and string encoder of ``_json`` are driven here the way json.decoder and json.encoder
# drive them. Whatever this path does not handle (invalid JSON, a value of another type, a dict key that is not a
# str, no ``_json``) is handed to the json package itself, so results and errors are the json package's.

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE
_INFINITY = float("inf")


class _ScanContext:
    """The attributes of json.JSONDecoder() that ``_json.make_scanner`` reads (the defaults of json.loads)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": -_INFINITY, "Infinity": _INFINITY, "NaN": float("nan")}.__getitem__


_ACCEL = {}


def _accelerator(name):
    """``_json.make_scanner`` (made into a scanner) or ``_json.encode_basestring_ascii``; None without _json."""
    if name not in _ACCEL:
        try:
            import _json
        except ImportError:
            _ACCEL["scan"] = _ACCEL["encode"] = None
        else:
            _ACCEL["scan"] = _json.make_scanner(_ScanContext())
            _ACCEL["encode"] = _json.encode_basestring_ascii
    return _ACCEL[name]


def loads(text):
    """``json.loads(text)`` of a str."""
    scan = _accelerator("scan")
    if scan is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = scan(text, start)
        except Exception:  # pylint: disable=broad-except
            pass  # invalid: json.loads below raises its own error
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json
    return json.loads(text)


class _Unsupported(Exception):
    pass


def _float_text(value):
    # json.encoder's floatstr (allow_nan)
    if math.isnan(value):
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value, out, encode, newline, step):
    """Append the JSON text of ``value`` to ``out`` as json.encoder does: ``newline`` is None for one line
    (separators ', ' and ': '), else a newline and the current indentation (separators ',' and ': ')."""
    if isinstance(value, str):
        out.append(encode(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float_text(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = None if newline is None else newline + step
        out.append("[" if inner is None else "[" + inner)
        separator = ", " if inner is None else "," + inner
        first = True
        for item in value:
            if first:
                first = False
            else:
                out.append(separator)
            _encode(item, out, encode, inner, step)
        out.append("]" if newline is None else newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = None if newline is None else newline + step
        out.append("{" if inner is None else "{" + inner)
        separator = ", " if inner is None else "," + inner
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unsupported(key)
            if first:
                first = False
            else:
                out.append(separator)
            out.append(encode(key))
            out.append(": ")
            _encode(item, out, encode, inner, step)
        out.append("}" if newline is None else newline + "}")
    else:
        raise _Unsupported(value)


def dumps(value, indent=None):
    """``json.dumps(value, indent=indent)`` (default separators, ASCII only, keys in their order)."""
    encode = _accelerator("encode")
    if encode is not None:
        out = []
        step = indent if isinstance(indent, str) else " " * (indent or 0)
        try:
            _encode(value, out, encode, None if indent is None else "\n", step)
        except (_Unsupported, RecursionError):
            pass  # the json package converts other keys, calls no default, reports a circular reference
        else:
            return "".join(out)
    import json
    return json.dumps(value, indent=indent)
