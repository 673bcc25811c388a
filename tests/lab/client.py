"""Test support, not shipped: one HTTP request to a local server, with the Host header chosen; the run a viewer's
server serves (view.json's run, its arrays read from run.bin)."""

import http.client
import json

import numpy as np

#: run.bin's typed arrays as NumPy's dtypes
DTYPES = {"Float64Array": "<f8", "Float32Array": "<f4", "Int32Array": "<i4"}


def request(server, path: str, method: str = "GET", host: str | None = "default") -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request; host None sends no Host header, "default" the server's own."""
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
    try:
        connection.putrequest(method, path, skip_host=True)
        if host is not None:
            connection.putheader("Host", f"127.0.0.1:{server.server_address[1]}" if host == "default" else host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def served_run(server) -> dict:
    """view.json's "run" from a physai view server, each array reference read from run.bin as a NumPy array of its
    shape (the page's frames.js unpack, in Python)."""
    status, _, body = request(server, "/view.json")
    blob_status, _, blob = request(server, "/run.bin")
    assert status == blob_status == 200

    def read(node):
        if isinstance(node, dict) and "bin" in node:
            flat = np.frombuffer(blob, DTYPES[node["type"]], node["length"], node["offset"])
            return flat.reshape(node["shape"])
        return {key: read(value) for key, value in node.items()} if isinstance(node, dict) else node

    return read(json.loads(body)["run"])
