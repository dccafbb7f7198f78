"""Read a tools/list result (JSON on stdin) and fail, naming the tool and the path, on any
input-schema keyword outside the set every major function-calling API accepts (Gemini's
function declarations are the narrowest: its OpenAPI subset plus anyOf and $ref).
`--except TOOL` skips a tool whose schema is what its author wrote on purpose."""
import json
import sys

PORTABLE = {
    "type", "properties", "required", "description", "enum", "const", "default", "anyOf",
    "items", "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "format", "title", "additionalProperties", "$ref", "$defs",
}


def walk(value, at, bad):
    if isinstance(value, dict):
        for key, sub in value.items():
            if key not in PORTABLE:
                bad.append(f"{at}/{key}")
            if key in ("properties", "$defs") and isinstance(sub, dict):
                for name, schema in sub.items():
                    walk(schema, f"{at}/{key}/{name}", bad)
            elif key in ("enum", "const", "default", "required"):
                continue
            else:
                walk(sub, f"{at}/{key}", bad)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            walk(sub, f"{at}/{i}", bad)


args = sys.argv[1:]
skipped = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "--except"}
listing = json.load(sys.stdin)
tools = listing.get("tools", [])
bad = []
for tool in tools:
    if tool["name"] not in skipped:
        walk(tool.get("inputSchema", {}), tool["name"], bad)
if bad or not tools:
    print("keywords outside the portable set:", ", ".join(bad) or "(no tools listed)", file=sys.stderr)
    sys.exit(1)
print(f"{len(tools)} tools, every input-schema keyword portable")
