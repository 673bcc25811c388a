"""Test support, not shipped: one HTTP request to a local server, with the Host header chosen."""

import http.client


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
