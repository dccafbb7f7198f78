"""The cross-SDK benchmark's report (scripts/bench-peers.sh): the median of each server's
rounds per workload, tool and protocol, as a markdown table with the ratios to rmcp at its best
(the faster of its two configurations in that row) and to the bare floor, and with --chart
FILE an SVG bar chart of calls/s, rmcp's bar its best configuration's.
Run: python3 scripts/bench_report.py RESULTS.jsonl [--chart FILE] [--caption TEXT]"""

import argparse
import json
import statistics
from collections import defaultdict

SERVERS = ["abilities", "rmcp-json", "rmcp", "fastmcp", "ts-sdk", "bare"]
LABELS = {"abilities": "abilities", "rmcp-json": "rmcp by hand, json_response",
          "rmcp": "rmcp by hand, defaults (SSE answers)", "fastmcp": "FastMCP (Python)",
          "ts-sdk": "TypeScript SDK v2 (Node)", "bare": "bare JSON-RPC floor"}
COLORS = {"abilities": "#2f6fdf", "rmcp-json": "#e07b39", "rmcp": "#e07b39",
          "fastmcp": "#3a9d5d", "ts-sdk": "#9b59b6", "bare": "#9aa0a6"}
RMCP = ("rmcp-json", "rmcp")
PROTOCOLS = {"2026": "2026-07-28, no session", "2025": "2025-11-25, a session each"}


def medians(path):
    runs = defaultdict(list)
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            runs[(row["workload"], row["tool"], row["protocol"], row["server"])].append(row)
    result = {}
    for key, rows in runs.items():
        result[key] = {field: statistics.median(r[field] for r in rows)
                       for field in ["rate", "p50_ms", "p95_ms", "p99_ms", "cpu_us_per_call"]}
        result[key]["peak_rss_kib"] = max(r["peak_rss_kib"] for r in rows)
        result[key]["rounds"] = len(rows)
    return result


def groups(result):
    """(workload, tool, protocol) in a stable order, and their servers."""
    order = defaultdict(list)
    for (workload, tool, protocol, server) in result:
        if server not in order[(workload, tool, protocol)]:
            order[(workload, tool, protocol)].append(server)
    keys = sorted(order, key=lambda k: (k[0] != "shop", k[2] != "2026", k[1]))
    return [(k, [s for s in SERVERS if s in order[k]]) for k in keys]


def best_rmcp(result, key):
    """rmcp at its best in the row `key`: (its server name, its figures), or None."""
    found = [(server, result[key + (server,)]) for server in RMCP if key + (server,) in result]
    return max(found, key=lambda pair: pair[1]["rate"], default=None)


def table(result):
    lines = ["| workload | tool | protocol | server | calls/s | p50 / p95 / p99 ms | CPU/call | "
             "peak RSS | vs rmcp at its best | vs floor |", "|" + "---|" * 10]
    for (workload, tool, protocol), servers in groups(result):
        best = best_rmcp(result, (workload, tool, protocol))
        rmcp = best[1] if best else None
        bare = result.get((workload, tool, protocol, "bare"))
        for server in servers:
            m = result[(workload, tool, protocol, server)]
            vs_rmcp = f"{m['rate'] / rmcp['rate']:.2f}x" if rmcp else ""
            vs_bare = f"{m['rate'] / bare['rate']:.2f}x" if bare else ""
            lines.append(
                f"| {workload} | {tool} | {protocol} | {LABELS[server]} | {m['rate']:,.0f} | "
                f"{m['p50_ms']:.2f} / {m['p95_ms']:.2f} / {m['p99_ms']:.2f} | "
                f"{m['cpu_us_per_call']:.0f} us | {m['peak_rss_kib'] / 1024:.0f} MiB | "
                f"{vs_rmcp} | {vs_bare} |")
    return "\n".join(lines)


def chart(result, caption):
    """Horizontal bars of calls/s, one group per workload, tool and protocol."""
    bar, gap, left, width = 14, 12, 260, 460
    # rmcp's bar is its best configuration's in each row.
    rows = []
    for key, servers in groups(result):
        best = best_rmcp(result, key)
        rows.append((key, [s for s in servers if s not in RMCP or (best and s == best[0])]))
    top = max(m["rate"] for m in result.values())
    height = 70 + sum(len(s) * bar + gap + 18 for _, s in rows) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 120}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="22" font-size="15" font-weight="bold">MCP tool calls per second, '
           f'50 concurrent clients (higher is better)</text>',
           f'<text x="10" y="40" fill="#555">{escape(caption)}</text>']
    y = 60
    for (workload, tool, protocol), servers in rows:
        out.append(f'<text x="10" y="{y + 12}" font-weight="bold">{workload}: {escape(tool)}'
                   f'</text><text x="10" y="{y + 26}" fill="#555">{PROTOCOLS[protocol]}</text>')
        y += 4
        for server in servers:
            m = result[(workload, tool, protocol, server)]
            w = max(1, round(width * m["rate"] / top))
            out.append(f'<text x="{left - 6}" y="{y + bar - 3}" text-anchor="end">'
                       f'{LABELS[server]}</text>')
            out.append(f'<rect x="{left}" y="{y}" width="{w}" height="{bar - 2}" '
                       f'fill="{COLORS[server]}"/>')
            out.append(f'<text x="{left + w + 4}" y="{y + bar - 3}">{m["rate"]:,.0f}</text>')
            y += bar
        y += gap + 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--chart")
    parser.add_argument("--caption", default="")
    args = parser.parse_args()
    result = medians(args.results)
    print(table(result))
    if args.chart:
        with open(args.chart, "w") as f:
            f.write(chart(result, args.caption))
        print(f"chart: {args.chart}")


if __name__ == "__main__":
    main()
