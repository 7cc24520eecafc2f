"""Conversion between JSON objects and the typed models.

Every model is a dataclass deriving from :class:`WireModel`. ``from_dict`` reads the wire names
(the JSON keys, which are also the field names except where a key is a Python keyword: a field
``lambda_`` carries ``metadata={"wire": "lambda"}``), converts nested objects by the fields'
type hints and keeps every key it does not know in ``extra``, so an answer from a newer server
still parses and ``to_dict`` sends those keys back unchanged. ``to_dict`` leaves out fields that
are ``None``: the server reads an absent field as its default.
"""

import dataclasses
import typing
from typing import Any, ClassVar, Dict, Mapping, Type, TypeVar

T = TypeVar("T", bound="WireModel")

_NONE_TYPE = type(None)


class WireFormatError(ValueError):
    """A JSON value that does not have the type a model's field declares; ``path`` names it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class WireModel:
    """Base of the models: ``from_dict``, ``to_dict`` and the unknown keys in ``extra``."""

    #: The OpenAPI schema (``components.schemas``) the model follows.
    SCHEMA: ClassVar[str] = ""

    @property
    def extra(self) -> Dict[str, Any]:
        """Keys of the JSON object that the model has no field for, kept as they came."""
        return self.__dict__.setdefault("_extra", {})

    @classmethod
    def from_dict(cls: Type[T], data: Mapping[str, Any], path: str = "") -> T:
        """Builds the model from a decoded JSON object; unknown keys go to ``extra``."""
        where = path or cls.__name__
        if not isinstance(data, Mapping):
            raise WireFormatError(where, f"expected an object, got {_kind(data)}")
        hints = _hints(cls)
        values: Dict[str, Any] = {}
        known = set()
        for f in dataclasses.fields(cls):
            key = wire_name(f)
            known.add(key)
            if key in data:
                values[f.name] = _decode(hints[f.name], data[key], f"{where}.{key}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise WireFormatError(where, f"missing field {key!r}")
        instance = cls(**values)
        extra = {k: v for k, v in data.items() if k not in known}
        if extra:
            instance.__dict__["_extra"] = extra
        return instance

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object, with wire names; ``None`` fields are left out, ``extra`` is added."""
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None:
                out[wire_name(f)] = encode(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def wire_name(f: "dataclasses.Field[Any]") -> str:
    """The JSON key of a model's field."""
    return f.metadata.get("wire", f.name)


def encode(value: Any) -> Any:
    """A model, or lists and dicts holding models, as plain JSON values."""
    if isinstance(value, WireModel):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _decode(hint: Any, value: Any, path: str) -> Any:
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        if value is None and _NONE_TYPE in args:
            return None
        rest = [a for a in args if a is not _NONE_TYPE]
        if len(rest) == 1:
            return _decode(rest[0], value, path)
        return value  # a union of shapes (a stage given by name or as an object): kept as sent
    if value is None:
        raise WireFormatError(path, "expected a value, got null")
    if origin is list:
        if not isinstance(value, list):
            raise WireFormatError(path, f"expected an array, got {_kind(value)}")
        return [_decode(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise WireFormatError(path, f"expected an object, got {_kind(value)}")
        return {k: _decode(args[1], v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, WireModel):
        return hint.from_dict(value, path)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise WireFormatError(path, f"expected a number, got {_kind(value)}")
        return float(value)
    if hint is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise WireFormatError(path, f"expected an integer, got {_kind(value)}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise WireFormatError(path, f"expected a boolean, got {_kind(value)}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise WireFormatError(path, f"expected a string, got {_kind(value)}")
        return value
    raise TypeError(f"{path}: no conversion for the type {hint!r}")
