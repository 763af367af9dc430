"""Checks that Gemini tool results with content blocks are accepted by the
Gemini SDK's own types.

Reads a JSON array of `contents` (what `gemini::results` returns) from stdin
and validates each with `google.genai.types.Content` in JSON mode, where the
SDK reads `bytes` as base64. The SDK's models forbid unknown fields, so a
misnamed key fails here. Prints `ok` and each function response's parts as
`mime_type:size` on stdout for the caller to compare.

    cargo test --test quick gemini_results::
"""

import json
import sys

import pydantic
from google.genai import types


def main():
    contents = json.load(sys.stdin)
    for index, content in enumerate(contents):
        try:
            parsed = types.Content.model_validate_json(json.dumps(content))
        except pydantic.ValidationError as error:
            print(f"content {index} is not a Gemini Content: {error}", file=sys.stderr)
            return 1
        for part in parsed.parts or []:
            response = part.function_response
            if response is None:
                continue
            blobs = [f"{p.inline_data.mime_type}:{len(p.inline_data.data)}" for p in response.parts or [] if p.inline_data]
            print(f"{response.name} {' '.join(blobs)}".rstrip())
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
