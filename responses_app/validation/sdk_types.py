"""Request bodies checked against the ``openai`` SDK's own request types (its TypedDicts).

The SDK's types say what every field of a request may hold; a new SDK brings its new
fields with it. pydantic validates a TypedDict leniently by default, so the schema it
derives is tightened before use:

- unknown keys are refused (``extra_forbidden``) at every depth: a typo is a 400;
- ``Iterable[...]`` fields are validated as lists, at once (pydantic would wrap them in
  a lazy iterator that checks nothing until read);
- a union of objects that a ``type`` field tells apart is dispatched on that field, so
  that an error names what is wrong with the member the client meant, not with all of
  them;
- strict mode: ``"5"`` is not an integer and ``1`` is not ``true``;
- and laxer where OpenAI's API is laxer than the SDK's types: a message may carry an
  ``id`` and needs only its role and content, a required field that may be null or a
  required list may be left out, an optional field may be null, and a
  local_shell_call_output may name its call in ``call_id``.

``first_error`` turns pydantic's error list into the one 400 a client should read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator, core_schema

from responses_app.wire.errors import InvalidRequest

# Union members are labelled with a leading NUL so that error locations can drop them:
# no key of a valid JSON body holds a NUL (lib/json_input refuses it).
_LABEL = "\x00"
# What an input item without a ``type`` is: an item reference when it holds only an id
# (the SDK types ``ItemReference.type`` as optional), otherwise a message.
_UNTYPED = "message"
_REFERENCE = "item_reference"
# Marks the union of the members that share one ``type`` (the three message shapes).
_SAME_TYPE = "sdk_types.same_type"
# The members of a tagged union that are not objects (a string, an array).
_NOT_OBJECT = "(not an object)"


def strict_validator(typed_dict: type) -> SchemaValidator:
    schema = copy.deepcopy(TypeAdapter(typed_dict).core_schema)
    definitions = {d["ref"]: d for d in schema.get("definitions", []) if "ref" in d}
    _tighten(schema, definitions)
    return SchemaValidator(schema)


def check(validator: SchemaValidator, body: dict[str, Any]) -> None:
    """Raise the 400 for the first thing wrong with ``body``."""
    try:
        validator.validate_python(body, strict=True)
    except ValidationError as error:
        raise first_error(error) from None


def _tighten(node: Any, definitions: dict[str, dict[str, Any]]) -> None:
    if isinstance(node, (list, tuple)):
        for child in node:
            _tighten(child, definitions)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "typed-dict":
        node["extra_behavior"] = "forbid"
        tags = _type_tags(node, definitions)
        if tags == [_UNTYPED]:
            _lenient_message(node)
        elif tags == ["local_shell_call_output"]:
            _lenient_local_shell_output(node)
    elif kind == "typed-dict-field":
        if node["schema"].get("type") in ("nullable", "list", "generator"):
            # ``Required[Optional[X]]`` and ``Required[Iterable[X]]``: the SDK always sends
            # the key; OpenAI's API takes its absence as null or empty (a function tool
            # without ``strict``, an output_text part without ``annotations``).
            node["required"] = False
        if not node.get("required", True) and node["schema"].get("type") != "nullable":
            # An optional field sent as null is as good as left out (clients that write
            # every unset field as null).
            node["schema"] = core_schema.nullable_schema(node["schema"])
    elif kind == "generator":
        node["type"] = "list"
    elif kind == "union" and not node.get("metadata", {}).get(_SAME_TYPE):
        _dispatch_on_type(node, definitions)
    for value in list(node.values()):
        _tighten(value, definitions)


def _lenient_message(message: dict[str, Any]) -> None:
    """The SDK types a message three ways (easy, input, output), each stricter than
    OpenAI's API: clients send an assistant message with an ``id`` and no ``status``
    (the AI SDK), or a user message read back from a conversation with its ``id``. Any
    message may have an id and a phase; only its role and content are required."""
    fields = message["fields"]
    fields.setdefault("id", core_schema.typed_dict_field(core_schema.str_schema(), required=False))
    # A message read back from a conversation and dumped carries the phase it has
    # (null for a user's); the SDK types it on the easy and output forms only.
    fields.setdefault("phase", core_schema.typed_dict_field(core_schema.nullable_schema(
        core_schema.literal_schema(["commentary", "final_answer"])), required=False))
    for name, field in fields.items():
        if name not in ("role", "content"):
            field["required"] = False


def _lenient_local_shell_output(output: dict[str, Any]) -> None:
    """The SDK names the call a local_shell_call_output answers in its ``id``; the Agents SDK
    sends ``call_id`` instead (validation/create takes either)."""
    fields = output["fields"]
    fields["id"]["required"] = False
    fields.setdefault("call_id", core_schema.typed_dict_field(core_schema.str_schema(), required=False))


def _dispatch_on_type(union: dict[str, Any], definitions: dict[str, dict[str, Any]]) -> None:
    """Turn a union of objects with a literal ``type`` (and perhaps values that are not
    objects: a string, an array) into a union tagged by that ``type`` (in place)."""
    groups: dict[str, list[Any]] = {}
    for choice in union["choices"]:
        member = choice[0] if isinstance(choice, tuple) else choice
        tags = _type_tags(member, definitions)
        if tags is None:
            _label_choices(union)
            return
        for tag in tags or [_NOT_OBJECT]:
            groups.setdefault(tag, []).append(member)
    if set(groups) == {_NOT_OBJECT}:
        _label_choices(union)
        return
    choices = {}
    for tag, members in groups.items():
        if len(members) == 1:
            choices[f"{_LABEL}{tag}"] = members[0]
        else:
            choices[f"{_LABEL}{tag}"] = core_schema.union_schema(
                [(m, f"{_LABEL}{i}") for i, m in enumerate(members)], metadata={_SAME_TYPE: True})
    tagged = core_schema.tagged_union_schema(
        choices=choices,
        discriminator=_tag_of(set(groups)),
        custom_error_type="invalid_union_member",
        custom_error_message="Invalid value for 'type'",
    )
    union.clear()
    union.update(tagged)


def _tag_of(tags: set[str]) -> Callable[[Any], str | None]:
    def tag(value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"{_LABEL}{_NOT_OBJECT}" if _NOT_OBJECT in tags else None
        kind = value.get("type")
        if kind is None and _UNTYPED in tags:
            kind = _REFERENCE if _REFERENCE in tags and set(value) == {"id"} else _UNTYPED
        return f"{_LABEL}{kind}" if isinstance(kind, str) else None

    return tag


def _type_tags(member: dict[str, Any], definitions: dict[str, dict[str, Any]]) -> list[str] | None:
    """The ``type`` values a member object accepts; [] for a member that is not an object;
    None for an object that no ``type`` tells apart."""
    target = definitions.get(member.get("schema_ref", "")) if member.get("type") == "definition-ref" else member
    if target is None or target.get("type") in ("dict", "any", "model", "dataclass"):
        return None
    if target.get("type") != "typed-dict":
        return []
    field = target["fields"].get("type")
    if field is None:
        return None
    schema = field["schema"]
    while schema.get("type") in ("default", "nullable"):
        schema = schema["schema"]
    if schema.get("type") != "literal":
        return None
    if not field.get("required", True) and not {_UNTYPED, _REFERENCE} & set(schema["expected"]):
        return None
    return [str(value) for value in schema["expected"]]


def _label_choices(union: dict[str, Any]) -> None:
    union["choices"] = [(choice[0] if isinstance(choice, tuple) else choice, f"{_LABEL}{index}")
                        for index, choice in enumerate(union["choices"])]


# --- errors ----------------------------------------------------------------------------------

_TYPE_NAMES = {
    "string_type": "a string", "int_type": "an integer", "float_type": "a number", "bool_type": "a boolean",
    "list_type": "an array", "dict_type": "an object", "model_type": "an object", "none_required": "null",
    "int_from_float": "an integer", "typed_dict_type": "an object",
}


def first_error(error: ValidationError) -> InvalidRequest:
    """The 400 for the first failure, inside the union member the client most likely meant."""
    # pydantic's ErrorDetails are TypedDicts: read here as the plain dicts they are.
    return _pick(cast(list[dict[str, Any]], error.errors(include_url=False)), 0)


def _pick(errors: list[dict[str, Any]], start: int) -> InvalidRequest:
    """At each union (from ``start`` in the location), follow the member that got furthest
    into the body, then the one that needs the fewest fixes; members that all fail on the
    type of the same value become one "expected a or b"."""
    first = errors[0]
    at = _label_at(first["loc"], start)
    if at is None:
        return _one_error(_param(first["loc"]), first)
    members = _members(errors, first["loc"][:at], at)
    failures = [entry for group in members.values() for entry in group]
    expected = [_TYPE_NAMES.get(entry["type"]) for entry in failures]
    if len(failures) == len(members) > 1 and all(expected) and len({_param(e["loc"]) for e in failures}) == 1:
        param, names = _param(first["loc"]), dict.fromkeys(filter(None, expected))
        return InvalidRequest(f"Invalid type for '{param}': expected {' or '.join(names)}, "
                              f"but got {_json_type(first['input'])}.", param=param, code="invalid_type")
    if _is_tag(first["loc"][at - 1]):
        # The shapes of one ``type`` (the three messages): the one needing the fewest fixes.
        best = min(members.values(), key=lambda group: _fixes(group, at + 1))
    else:
        best = max(members.values(), key=lambda group: (max(len(_path(e["loc"])) for e in group),
                                                        -_fixes(group, at + 1)))
    return _pick(best, at + 1)


def _is_tag(part: Any) -> bool:
    """A tagged union's label (``type`` value) rather than a member's index."""
    return isinstance(part, str) and part.startswith(_LABEL) and not part[len(_LABEL):].isdigit()


def _members(errors: list[dict[str, Any]], prefix: tuple[Any, ...], at: int) -> dict[str, list[dict[str, Any]]]:
    """The failures of each member of the union at ``prefix`` (whose label is at ``at``)."""
    members: dict[str, list[dict[str, Any]]] = {}
    for entry in errors:
        if entry["loc"][:at] == prefix and _label_at(entry["loc"], at) == at:
            members.setdefault(entry["loc"][at], []).append(entry)
    return members


def _fixes(errors: list[dict[str, Any]], start: int) -> int:
    """How many failures a client must fix: within a nested union, only its easiest member's."""
    count, seen = 0, set()
    for entry in errors:
        at = _label_at(entry["loc"], start)
        if at is None:
            count += 1
        elif entry["loc"][:at] not in seen:
            seen.add(entry["loc"][:at])
            count += min(_fixes(group, at + 1) for group in _members(errors, entry["loc"][:at], at).values())
    return count


def _label_at(loc: tuple[Any, ...], start: int) -> int | None:
    for index in range(start, len(loc)):
        if isinstance(loc[index], str) and loc[index].startswith(_LABEL):
            return index
    return None


def _one_error(param: str, entry: dict[str, Any]) -> InvalidRequest:
    kind = entry["type"]
    if kind in _TYPE_NAMES:
        return InvalidRequest(f"Invalid type for '{param}': expected {_TYPE_NAMES[kind]}, but got "
                              f"{_json_type(entry['input'])}.", param=param, code="invalid_type")
    if kind == "extra_forbidden":
        return InvalidRequest(f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter")
    if kind == "missing":
        return InvalidRequest(f"Missing required parameter: '{param}'.", param=param,
                              code="missing_required_parameter")
    if kind == "invalid_union_member":
        if not isinstance(entry["input"], dict):
            return InvalidRequest(f"Invalid type for '{param}': expected an object, but got "
                                  f"{_json_type(entry['input'])}.", param=param, code="invalid_type")
        param = f"{param}.type" if param else "type"
        value = entry["input"].get("type")
        if value is None:
            return InvalidRequest(f"Missing required parameter: '{param}'.", param=param,
                                  code="missing_required_parameter")
        return InvalidRequest(f"Invalid value for '{param}': {value!r}.", param=param, code="invalid_value")
    if kind == "literal_error":
        return InvalidRequest(f"Invalid value for '{param}': {entry['input']!r}. Supported values are: "
                              f"{entry['ctx']['expected']}.", param=param, code="invalid_value")
    return InvalidRequest(f"Invalid value for '{param}': {entry['msg']}.", param=param, code="invalid_value")


def _path(loc: tuple[Any, ...]) -> list[Any]:
    return [part for part in loc if not (isinstance(part, str) and part.startswith(_LABEL))]


def _param(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in _path(loc):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                       (list, "an array"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__
