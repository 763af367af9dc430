"""Checks that the Gemini export is accepted by the Gemini SDK's own types.

Reads the catalog's `--provider gemini` JSON (`{"tools": [...]}`) from
stdin and validates every tool with `google.genai.types.Tool` and every
function declaration with `google.genai.types.FunctionDeclaration`. The SDK's
models forbid unknown fields, so a keyword Gemini's `Schema` does not have
(`$ref`, `oneOf`, `const`, `exclusiveMinimum`...) fails here. Gemini's
built-ins (`{"googleSearch": {}}`, `{"codeExecution": {}}`) are tools of
their own, checked as `types.Tool` too.

    cargo run -q --example catalog -- --provider gemini --builtins | python3 tests/peers/gemini_declarations.py 2

The optional argument is the number of built-in tools the payload must hold.
"""

import json
import sys

import pydantic
from google.genai import types

# What Gemini's `parameters` must never carry: JSON Schema keywords outside
# the OpenAPI subset. Some of these are fields of the SDK's `Schema` (it
# also speaks a newer JSON Schema mode), so the model alone would let them
# through.
FORBIDDEN = {"additionalProperties", "additional_properties", "$defs", "defs", "$ref", "ref", "$schema"}


def forbidden_keys(schema, path):
    if isinstance(schema, dict):
        for key, value in schema.items():
            here = f"{path}/{key}"
            if key in FORBIDDEN and not path.endswith("/properties"):
                yield here
            yield from forbidden_keys(value, here)
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from forbidden_keys(value, f"{path}/{index}")


def main():
    expected_builtins = int(sys.argv[1]) if len(sys.argv) > 1 else None
    try:
        payload = json.load(sys.stdin)
    except json.JSONDecodeError as error:
        sys.exit(f"gemini declarations: stdin is not JSON: {error}")
    tools = payload.get("tools") if isinstance(payload, dict) else None
    if not isinstance(tools, list) or not tools:
        sys.exit('gemini declarations: expected {"tools": [...]} with at least one tool')
    failures = []
    count = 0
    builtins = sum(1 for tool in tools if isinstance(tool, dict) and "functionDeclarations" not in tool)
    for index, tool in enumerate(tools):
        try:
            types.Tool.model_validate(tool)
        except pydantic.ValidationError as error:
            failures.append(f"tools[{index}] is not a types.Tool:\n{error}")
        for declaration in tool.get("functionDeclarations", []):
            count += 1
            name = declaration.get("name", "<no name>")
            try:
                types.FunctionDeclaration.model_validate(declaration)
            except pydantic.ValidationError as error:
                failures.append(f"{name}: not a types.FunctionDeclaration:\n{error}")
            for where in forbidden_keys(declaration.get("parameters", {}), "/parameters"):
                failures.append(f"{name}: {where} is outside Gemini's OpenAPI subset")
    if count == 0:
        failures.append("no function declarations")
    if expected_builtins is not None and builtins != expected_builtins:
        failures.append(f"expected {expected_builtins} built-in tools, found {builtins}")
    if failures:
        sys.exit("gemini declarations rejected:\n" + "\n".join(failures))
    print(f"gemini: {count} declarations and {builtins} built-in tools passed, 0 failed")


if __name__ == "__main__":
    main()
