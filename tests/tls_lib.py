"""A test CA, a loopback TLS front for a real server, and what crossed it. Standard library + cryptography.

    ca = ThrowawayCA(tmp_path)                    # ca.ca_pem: the CA to trust; ca.cert_pem/ca.key_pem: 127.0.0.1's
    with TLSFront(ca, target_port) as front:   # https://127.0.0.1:{front.port} -> http://127.0.0.1:{target_port}
        ...
        front.requests()                       # [(method, path, {header: value}, body)] the server got, in order

    with TLSFront(ca, target_port, h2=True) as front:  # ALPN h2 or http/1.1, as the client offers
        front.h2_requests()                    # [(method, path, {header: value}, body)] that came over HTTP/2

The front is a small gate in front of the real server that changes only what the test is about
(the server speaks TLS): it terminates TLS with a certificate of the test CA and relays the bytes
unchanged to the server's plain port. It parses the client-to-server bytes it relays (HTTP/1.1,
Content-Length or chunked bodies) so tests can assert exactly what reached the server.

With ``h2=True`` it also offers ALPN h2 (an HTTP/2 server, as most TLS servers are): a connection
that picks h2 is served by the ``h2`` library (the one mitmproxy uses), which rejects a request
carrying a connection-specific header such as Transfer-Encoding (RFC 9113 8.2.2: the stream is
reset); each request is recorded as it came (pseudo-headers among its headers) and passed on to the
server as HTTP/1.1 with its Content-Length, the answer relayed back.
"""
from __future__ import annotations

import datetime
import ipaddress
import pathlib
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class ThrowawayCA:
    """A throwaway CA (``ca_pem``) and a server certificate for 127.0.0.1 it signed (``cert_pem``, ``key_pem``)."""

    def __init__(self, folder: pathlib.Path, name: str = "mcpx test CA"):
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
              .not_valid_after(now + datetime.timedelta(days=2))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                           key_encipherment=False, data_encipherment=False, key_agreement=False,
                                           encipher_only=False, decipher_only=False), critical=True)
              .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                            x509.DNSName("localhost")]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        folder.mkdir(parents=True, exist_ok=True)
        self.ca_pem = folder / "test-ca.pem"
        self.cert_pem = folder / "server-cert.pem"
        self.key_pem = folder / "server-key.pem"
        self.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM))
        self.key_pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))


class TLSFront:
    """https://127.0.0.1:``port`` in front of http://127.0.0.1:``target_port`` (see the module docstring)."""

    def __init__(self, ca: ThrowawayCA, target_port: int, h2: bool = False):
        self.target_port = target_port
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(str(ca.cert_pem), str(ca.key_pem))
        if h2:
            self.ctx.set_alpn_protocols(["h2", "http/1.1"])
        self._h2: list[tuple[str, str, dict[str, str], bytes]] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.handshakes_failed = 0
        self._c2s: list[bytearray] = []  # per connection: the plaintext the server got
        self._lock = threading.Lock()
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            with self._lock:
                self.handshakes_failed += 1
            raw.close()
            return
        if tls.selected_alpn_protocol() == "h2":
            try:
                self._serve_h2(tls)
            finally:
                tls.close()
            return
        up = socket.create_connection(("127.0.0.1", self.target_port))
        buf = bytearray()
        with self._lock:
            self._c2s.append(buf)

        def pump(src, dst, record: bytearray | None) -> None:
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    if record is not None:
                        with self._lock:
                            record.extend(data)
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        t = threading.Thread(target=pump, args=(up, tls, None), daemon=True)
        t.start()
        pump(tls, up, buf)
        t.join(5)
        tls.close()
        up.close()

    def _serve_h2(self, tls: ssl.SSLSocket) -> None:
        import http.client

        import h2.config
        import h2.connection
        import h2.events
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        tls.sendall(conn.data_to_send())
        heads: dict[int, dict[str, str]] = {}
        bodies: dict[int, bytearray] = {}
        while True:
            try:
                data = tls.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                evs = conn.receive_data(data)
            except Exception:  # a protocol error: h2 has queued its GOAWAY
                tls.sendall(conn.data_to_send())
                return
            for ev in evs:
                if isinstance(ev, h2.events.RequestReceived):
                    heads[ev.stream_id] = {k.lower(): v for k, v in ev.headers}
                    bodies[ev.stream_id] = bytearray()
                elif isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    head, body = heads.pop(ev.stream_id), bytes(bodies.pop(ev.stream_id))
                    with self._lock:
                        self._h2.append((head[":method"], head[":path"], head, body))
                    up = http.client.HTTPConnection("127.0.0.1", self.target_port, timeout=30)
                    up.request(head[":method"], head[":path"], body,
                               {k: v for k, v in head.items() if not k.startswith(":")})
                    r = up.getresponse()
                    answer = r.read()
                    up.close()
                    conn.send_headers(ev.stream_id, [(":status", str(r.status))] + [
                        (k.lower(), v) for k, v in r.getheaders()
                        if k.lower() not in ("connection", "transfer-encoding", "keep-alive")])
                    conn.send_data(ev.stream_id, answer, end_stream=True)  # small answers: within the window
            tls.sendall(conn.data_to_send())

    def h2_requests(self) -> list[tuple[str, str, dict[str, str], bytes]]:
        """Every request that came over HTTP/2 (``h2=True``), in order: its headers as they came."""
        with self._lock:
            return list(self._h2)

    def requests(self) -> list[tuple[str, str, dict[str, str], bytes]]:
        """Every HTTP request the server got through the front, in order (per connection, connections in order)."""
        with self._lock:
            streams = [bytes(b) for b in self._c2s]
        out = []
        for data in streams:
            out.extend(_parse_requests(data))
        return out

    def stop(self) -> None:
        self._stop = True
        self.sock.close()

    def __enter__(self) -> "TLSFront":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _parse_requests(data: bytes) -> list[tuple[str, str, dict[str, str], bytes]]:
    out = []
    i = 0
    while i < len(data):
        end = data.find(b"\r\n\r\n", i)
        if end < 0:
            break
        head = data[i:end].decode("latin-1").split("\r\n")
        method, path, _ = head[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        i = end + 4
        if "content-length" in headers:
            n = int(headers["content-length"])
            body, i = data[i:i + n], i + n
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                eol = data.find(b"\r\n", i)
                size = int(data[i:eol].split(b";")[0], 16)
                i = eol + 2
                if size == 0:
                    i = data.find(b"\r\n", i) + 2
                    break
                body += data[i:i + size]
                i += size + 2
            body = bytes(body)
        else:
            body = b""
        out.append((method, path, headers, body))
    return out
