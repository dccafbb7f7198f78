"""Check one Inspector CLI result (JSON on stdin) against expect.json.

Usage: check_inspector.py EXPECT.json tools|count_posts|missing_post TRANSPORT
"""

import json
import sys

expect_path, case, transport = sys.argv[1:]
with open(expect_path, encoding="utf-8") as f:
    expect = json.load(f)
result = json.load(sys.stdin)
label = f"inspector {transport} {case}"

if case == "tools":
    names = sorted(t["name"] for t in result["tools"])
    ok, detail = names == sorted(expect["tools"]), names
elif case == "count_posts":
    want = expect["count_posts"]["structuredContent"]
    text = json.loads(result["content"][0]["text"])
    ok = result.get("isError") is False and result.get("structuredContent") == want and text == want
    detail = result
else:
    error = json.loads(result["content"][0]["text"])
    ok, detail = result.get("isError") is True and error["code"] == expect[case]["code"], result

print(f"{'PASS' if ok else 'FAIL'} {label}" + ("" if ok else f": {detail}"))
sys.exit(0 if ok else 1)
