"""Checks that the Anthropic export is accepted by the Anthropic SDK's own types.

Reads the catalog's `--provider anthropic --builtins` JSON (`{"tools":
[...]}`) from stdin and checks every tool against the member of
`anthropic.types.ToolUnionParam` it claims to be (by its `type`; a tool
without one is a `ToolParam`): the SDK's TypedDicts, walked field by field,
so that a missing required key, a value of the wrong type or literal, and
an unknown key (which TypedDicts alone would let through) all fail.

    cargo run -q --example catalog -- --provider anthropic --builtins | python3 tests/peers/anthropic_tools.py 3

The optional argument is the number of built-in tools the payload must hold.
"""

import json
import sys
import types as pytypes
import typing

import typing_extensions
from anthropic.types import ToolParam, ToolUnionParam

Literal = (typing.Literal, typing_extensions.Literal)
Required = (typing.Required, typing_extensions.Required)
NotRequired = (typing.NotRequired, typing_extensions.NotRequired)
Annotated = (typing.Annotated, typing_extensions.Annotated)


def hints(cls):
    return typing_extensions.get_type_hints(cls, include_extras=True)


def required_keys(cls):
    total = getattr(cls, "__total__", True)
    keys = set()
    for key, hint in hints(cls).items():
        origin = typing.get_origin(hint)
        if origin in Required or (total and origin not in NotRequired):
            keys.add(key)
    return keys


def check(hint, value, path):
    """The problems of `value` as a `hint`, as a list of strings."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in Annotated or origin in Required or origin in NotRequired:
        return check(args[0], value, path)
    if hint in (object, typing.Any):
        return []
    if origin in (typing.Union, pytypes.UnionType):
        if value is None and type(None) in args:
            return []
        tried = [check(member, value, path) for member in args if member is not type(None)]
        return min(tried, key=len) if all(tried) else []
    if origin in Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {args!r}"]
    if typing_extensions.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{path}: expected an object ({hint.__name__})"]
        known = hints(hint)
        problems = [f"{path}/{key}: not a field of {hint.__name__}" for key in value if key not in known]
        problems += [f"{path}: missing `{key}` ({hint.__name__})" for key in required_keys(hint) if key not in value]
        for key, item in value.items():
            if key in known:
                problems += check(known[key], item, f"{path}/{key}")
        return problems
    if origin in (dict, typing.Dict) or hint is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        inner = args[1] if args else object
        return [p for key, item in value.items() for p in check(inner, item, f"{path}/{key}")]
    sequence = getattr(origin, "__name__", "") in ("list", "List", "Iterable", "Sequence", "SequenceNotStr")
    if sequence or hint is list:
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        inner = args[0] if args else object
        return [p for i, item in enumerate(value) for p in check(inner, item, f"{path}/{i}")]
    if hint is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if hint is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer"]
    if hint is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: expected a number"]
    if hint is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string"]
    return [f"{path}: no check for the SDK type {hint!r}; extend tests/peers/anthropic_tools.py"]


def member_for(tool):
    """The member of ToolUnionParam a tool claims to be, by its `type`."""
    kind = tool.get("type")
    if kind is None or kind == "custom":
        return ToolParam
    for member in typing.get_args(ToolUnionParam):
        declared = hints(member).get("type")
        while typing.get_origin(declared) in Required + NotRequired + Annotated:
            declared = typing.get_args(declared)[0]
        if typing.get_origin(declared) in Literal and kind in typing.get_args(declared):
            return member
    return None


def main():
    expected_builtins = int(sys.argv[1]) if len(sys.argv) > 1 else None
    try:
        payload = json.load(sys.stdin)
    except json.JSONDecodeError as error:
        sys.exit(f"anthropic tools: stdin is not JSON: {error}")
    tools = payload.get("tools") if isinstance(payload, dict) else None
    if not isinstance(tools, list) or not tools:
        sys.exit('anthropic tools: expected {"tools": [...]} with at least one tool')
    failures, builtins = [], 0
    for index, tool in enumerate(tools):
        member = member_for(tool) if isinstance(tool, dict) else None
        if member is None:
            failures.append(f"tools[{index}]: no member of ToolUnionParam has the type {tool.get('type')!r}")
            continue
        if member is not ToolParam:
            builtins += 1
        failures += check(member, tool, f"tools[{index}] ({member.__name__})")
    if expected_builtins is not None and builtins != expected_builtins:
        failures.append(f"expected {expected_builtins} built-in tools, found {builtins}")
    if failures:
        sys.exit("anthropic tools rejected:\n" + "\n".join(failures))
    print(f"anthropic: {len(tools)} tools ({builtins} built-in) passed, 0 failed")


if __name__ == "__main__":
    main()
