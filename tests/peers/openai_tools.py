"""Checks that the OpenAI Responses export is accepted by the OpenAI SDK's own types.

Reads the catalog's `--provider openai-responses --builtins` JSON
(`{"tools": [...]}`) from stdin and validates every tool, in pydantic's strict mode, as the member of
`openai.types.responses.Tool` (the union of function tools and OpenAI's
built-ins) that its `type` names. The SDK's models keep unknown keys rather
than refuse them, so every model in the result, however deep, must have
kept none: a misspelt argument fails here.

    cargo run -q --example catalog -- --provider openai-responses --builtins | python3 tests/peers/openai_tools.py 3

The optional argument is the number of built-in tools the payload must hold.
"""

import json
import sys
import typing

import pydantic
from openai.types.responses import Tool


def members():
    """Each member model of the `Tool` union, by the `type` values it takes."""
    union = typing.get_args(Tool)[0] if typing.get_origin(Tool) is typing.Annotated else Tool
    found = {}
    for member in typing.get_args(union):
        for kind in typing.get_args(member.model_fields["type"].annotation):
            found[kind] = member
    return found


MEMBERS = members()


def extras(value, path):
    """The unknown keys the SDK's models kept, as JSON pointers."""
    if isinstance(value, pydantic.BaseModel):
        for key in value.model_extra or {}:
            yield f"{path}/{key}: not a field of {type(value).__name__}"
        for name in type(value).model_fields:
            yield from extras(getattr(value, name), f"{path}/{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from extras(item, f"{path}/{index}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from extras(item, f"{path}/{key}")


def main():
    expected_builtins = int(sys.argv[1]) if len(sys.argv) > 1 else None
    try:
        payload = json.load(sys.stdin)
    except json.JSONDecodeError as error:
        sys.exit(f"openai tools: stdin is not JSON: {error}")
    tools = payload.get("tools") if isinstance(payload, dict) else None
    if not isinstance(tools, list) or not tools:
        sys.exit('openai tools: expected {"tools": [...]} with at least one tool')
    failures, builtins = [], 0
    for index, tool in enumerate(tools):
        member = MEMBERS.get(tool.get("type")) if isinstance(tool, dict) else None
        if member is None:
            failures.append(f"tools[{index}]: no member of responses.Tool has the type {tool.get('type')!r}")
            continue
        try:
            model = member.model_validate(tool, strict=True)
        except pydantic.ValidationError as error:
            failures.append(f"tools[{index}] is not a {member.__name__}:\n{error}")
            continue
        if model.type != "function":
            builtins += 1
        failures += list(extras(model, f"tools[{index}] ({type(model).__name__})"))
    if expected_builtins is not None and builtins != expected_builtins:
        failures.append(f"expected {expected_builtins} built-in tools, found {builtins}")
    if failures:
        sys.exit("openai tools rejected:\n" + "\n".join(failures))
    print(f"openai responses: {len(tools)} tools ({builtins} built-in) passed, 0 failed")


if __name__ == "__main__":
    main()
