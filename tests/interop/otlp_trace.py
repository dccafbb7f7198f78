"""Traces received as a real collector receives them: an OTLP/HTTP receiver (protobuf bodies
decoded with the official OpenTelemetry definitions, `opentelemetry-proto` from PyPI) on a free
loopback port; the `site` example started with --otel pointing at it (OTEL_EXPORTER_OTLP_ENDPOINT);
a tools/call over 2026-07-28 HTTP carrying a known W3C traceparent in `_meta`, and one carrying
it as the HTTP header only. The spans must join that trace with the right parents, names and
attributes, and the receiver must have been sent protobuf.

Usage: python otlp_trace.py SITE_BINARY WORKDIR
Prints PASS/FAIL per check; exits 1 if any check failed."""

import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

site, workdir = sys.argv[1], sys.argv[2]
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
HEADER_TRACE = "11111111111111111111111111111111"
HEADER_PARENT = "2222222222222222"

spans = []
content_types = []
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        with lock:
            content_types.append(self.headers.get("content-type"))
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}.get("service.name")
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        spans.append(
                            {
                                "service": service,
                                "scope": scope.scope.name,
                                "name": span.name,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent_span_id": span.parent_span_id.hex(),
                                "kind": trace_pb2.Span.SpanKind.Name(span.kind),
                                "status": trace_pb2.Status.StatusCode.Name(span.status.code),
                                "attributes": {a.key: a.value.string_value or a.value.int_value for a in span.attributes},
                            }
                        )
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=receiver.serve_forever, daemon=True).start()
endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"

env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_BSP_SCHEDULE_DELAY="100")
env.pop("OTEL_SERVICE_NAME", None)
server = subprocess.Popen(
    [site, "--http", "127.0.0.1:0", "--db", os.path.join(workdir, "otel.db"), "--otel"],
    stdout=subprocess.PIPE,
    stderr=open(os.path.join(workdir, "otel-site.log"), "w"),
    env=env,
    text=True,
)
failed = 0


def check(name, ok, detail=""):
    global failed
    if ok:
        print(f"PASS otlp {name}")
    else:
        failed += 1
        print(f"FAIL otlp {name}: {detail}")


try:
    url = server.stdout.readline().strip()
    assert url.startswith("http://"), f"the site printed no URL: {url!r}"

    def call(request_id, meta, headers):
        meta = dict(meta)
        meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
        meta["io.modelcontextprotocol/clientCapabilities"] = {}
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "my-plugin-count-posts", "arguments": {"input": "post"}, "_meta": meta},
        }
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "my-plugin-count-posts",
                **headers,
            },
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    answer = call(1, {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "vendor=1"}, {})
    check("the call is answered", answer.get("result", {}).get("structuredContent") == {"result": 2}, answer)
    answer = call(2, {}, {"traceparent": f"00-{HEADER_TRACE}-{HEADER_PARENT}-01"})
    check("the call with the header is answered", "result" in answer, answer)

    # Batched every 100 ms: wait for both requests' spans (at most 15 s).
    deadline = time.time() + 15
    while time.time() < deadline:
        with lock:
            got = {(s["trace_id"], s["name"]) for s in spans}
        if {(TRACE, "tools/call my-plugin-count-posts"), (TRACE, "call my-plugin/count-posts"),
                (HEADER_TRACE, "tools/call my-plugin-count-posts")} <= got:
            break
        time.sleep(0.1)
    with lock:
        seen = list(spans)
    check("the exporter sends protobuf", content_types and all(c == "application/x-protobuf" for c in content_types), content_types)

    def one(trace, name):
        found = [s for s in seen if s["trace_id"] == trace and s["name"] == name]
        return found[0] if len(found) == 1 else None

    request = one(TRACE, "tools/call my-plugin-count-posts")
    check("a request span in the client's trace", request is not None, json.dumps(seen, indent=1))
    if request:
        check("its parent is the client's span", request["parent_span_id"] == PARENT, request)
        check("it is a server span", request["kind"] == "SPAN_KIND_SERVER", request)
        check("it names the method and the tool",
              request["attributes"].get("mcp.method.name") == "tools/call"
              and request["attributes"].get("gen_ai.tool.name") == "my-plugin-count-posts", request)
        check("the service is the server's name", request["service"] == "abilities-site-example", request)
        check("the scope is abilities", request["scope"] == "abilities", request)
    call_span = one(TRACE, "call my-plugin/count-posts")
    check("an ability span in the same trace", call_span is not None, json.dumps(seen, indent=1))
    if call_span and request:
        check("its parent is the request's span", call_span["parent_span_id"] == request["span_id"], call_span)
        attributes = call_span["attributes"]
        check("it names the surface, semantic and outcome",
              attributes.get("abilities.surface") == "native"
              and attributes.get("abilities.semantic") == "READ"
              and attributes.get("abilities.outcome") == "OK", attributes)
        check("no principal, no argument by default",
              "enduser.id" not in attributes and not any(k.startswith("abilities.argument.") for k in attributes), attributes)
    header = one(HEADER_TRACE, "tools/call my-plugin-count-posts")
    check("the HTTP traceparent header is the parent without one in _meta",
          header is not None and header["parent_span_id"] == HEADER_PARENT, json.dumps(seen, indent=1))
finally:
    server.terminate()
    server.wait(timeout=10)
    receiver.shutdown()

if failed:
    print(f"otlp: {failed} check(s) failed")
    sys.exit(1)
