"""What a v2 client can make the transport hold: a request message that
never completes, replies it never lets the daemon send (an HTTP/2 window
of 0), many messages being received at once, and a message larger than
the limit. Each attack is made with a
real HTTP/2 client (python3-h2) speaking to heterod's v2 socket the way a
hostile one would, against heterod under a 1 GiB address-space limit (as the
hostile suite runs it, tests/daemon/test_hostile.cpp), while a grpcio
client is served beside it (docs/limits.md, "Connections")."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
import numpy as np

from conftest import KSERVE_MODELS, Daemon, Stubs

FRAME_TIMEOUT_MS = 3000
ECHO = "/inference.GRPCInferenceService/ModelInfer"
ADDRESS_SPACE = 1 << 30


def config(frame_timeout_ms: int = FRAME_TIMEOUT_MS) -> str:
    return f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@", max_message_bytes: {4 << 20}}}
limits: {{frame_timeout_ms: {frame_timeout_ms}}}
models:
  - {{name: echo, path: {KSERVE_MODELS / "echo.onnx"}}}
"""


def echo_request(v2: Stubs, values: int) -> Any:
    r = v2.pb.ModelInferRequest(model_name="echo")
    r.inputs.add(name="x", datatype="FP32", shape=[values])
    r.raw_input_contents.append(np.ones(values, np.float32).tobytes())
    return r


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@dataclass
class Stream:
    status: str | None = None    # grpc-status, once the trailers came
    message: str = ""            # grpc-message
    reset: bool = False          # the server reset it (RST_STREAM)
    data: int = 0                # bytes of reply received
    sent: int = 0                # bytes of its request sent (the server's windows let them through)

    def cancelled(self) -> bool:
        """The server cancelled the call: gRPC says so with a status, or a reset."""
        return self.reset or self.status == str(grpc.StatusCode.CANCELLED.value[0])


@dataclass
class RawClient:
    """An HTTP/2 client that sends what it is told and reads only frames."""

    path: str
    window: int = 65535          # what it lets the server send, per stream
    sock: socket.socket = field(init=False)
    conn: h2.connection.H2Connection = field(init=False)
    streams: dict[int, Stream] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: self.window})
        self.conn.initiate_connection()
        self.flush()

    def flush(self) -> None:
        self.sock.settimeout(10)
        self.sock.sendall(self.conn.data_to_send())

    def call(self, method: str, body: bytes, *, announced: int | None = None, patience: float = 30) -> int:
        """Starts a call whose message says it is `announced` bytes long and
        sends `body` of it (all of it unless told otherwise), or as much as
        the server's windows let through within `patience` seconds."""
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", method),
                                     (":authority", "localhost"), ("content-type", "application/grpc"),
                                     ("te", "trailers")])
        self.streams[sid] = Stream()
        message = struct.pack(">BI", 0, len(body) if announced is None else announced) + body
        complete = announced is None
        give_up = time.monotonic() + patience
        while message and time.monotonic() < give_up and not self.streams[sid].cancelled():
            # What the server's windows let through now; the rest once it grants more.
            room = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if room == 0:
                self.read(0.5)
                continue
            chunk, message = message[:room], message[room:]
            self.conn.send_data(sid, chunk, end_stream=complete and not message)
            self.streams[sid].sent += len(chunk)
            self.flush()
        return sid

    def read(self, seconds: float) -> None:
        """Reads what the server sends for `seconds` (or until it closes)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                return
            if not data:
                return
            for event in self.conn.receive_data(data):
                self.on_event(event)
            self.flush()

    def on_event(self, event: Any) -> None:
        stream = self.streams.get(getattr(event, "stream_id", 0) or 0)
        if stream is None:
            return
        if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
            headers = dict(event.headers)
            if "grpc-status" in headers:
                stream.status = headers["grpc-status"]
                stream.message = headers.get("grpc-message", "")
        elif isinstance(event, h2.events.DataReceived):
            # Counted, never acknowledged: the window the client grants stays shut.
            stream.data += len(event.data)
        elif isinstance(event, h2.events.StreamReset):
            stream.reset = True

    def close(self) -> None:
        self.sock.close()


def warm_rss_kb(d: Daemon, v2: Stubs, values: int) -> int:
    """The daemon's RSS once it has answered one echo of `values` floats.

    What is measured against it is what an attack leaves behind, not what the
    daemon's first message of that size sets up for good (gRPC's threads and
    buffers, the model's first inference): with no GPU runtime started, those
    are a tenth of an idle daemon."""
    with d.channel() as channel:
        v2.rpc.GRPCInferenceServiceStub(channel).ModelInfer(echo_request(v2, values), timeout=10)
    return rss_kb(d.process.pid)


def served_meanwhile(d: Daemon, v2: Stubs) -> float:
    """A well-behaved grpcio client's echo, timed."""
    with d.channel() as channel:
        start = time.monotonic()
        reply = v2.rpc.GRPCInferenceServiceStub(channel).ModelInfer(echo_request(v2, 4), timeout=10)
        assert np.frombuffer(reply.raw_output_contents[0], np.float32).tolist() == [-1.0] * 4
        return time.monotonic() - start


def test_a_request_message_that_never_completes_is_cancelled(start_daemon: Any, v2: Stubs) -> None:
    d = start_daemon("slow-body", config(), address_space=ADDRESS_SPACE)
    client = RawClient(d.v2_socket)
    # Eight calls whose messages stop one byte short of their end, 1 MiB each.
    body = echo_request(v2, 1 << 18).SerializeToString()
    start = time.monotonic()
    sids = [client.call(ECHO, body[:-1], announced=len(body)) for _ in range(8)]
    # The daemon answers others meanwhile.
    assert served_meanwhile(d, v2) < 5
    while time.monotonic() - start < FRAME_TIMEOUT_MS / 1000 + 5 and not all(
            client.streams[s].cancelled() for s in sids):
        client.read(0.1)
    waited = time.monotonic() - start
    # Each call was cancelled once limits.frame_timeout_ms passed, not before.
    assert all(client.streams[s].cancelled() for s in sids), client.streams
    assert waited >= FRAME_TIMEOUT_MS / 1000 * 0.9, f"cancelled after {waited:.2f} s"
    assert "its request message did not arrive whole within 3000 ms (limits.frame_timeout_ms)" in d.log_text()
    # The connection serves on: a complete call on it is answered.
    sid = client.call(ECHO, echo_request(v2, 4).SerializeToString())
    client.read(2)
    assert client.streams[sid].status == "0", client.streams[sid]
    client.close()


def test_replies_a_client_does_not_read_are_bounded(start_daemon: Any, v2: Stubs) -> None:
    d = start_daemon("unread-replies", config(), address_space=ADDRESS_SPACE)
    # 8 MiB a connection (twice kserve.max_message_bytes, at least 8 MiB)
    # of replies may wait to be written; this client asks for 16 replies of
    # 2 MiB (less a little for the message around them) and grants the
    # daemon no window to send them in.
    client = RawClient(d.v2_socket, window=0)
    values = (2 << 20) // 4 - 256
    body = echo_request(v2, values).SerializeToString()
    baseline = warm_rss_kb(d, v2, values)
    sids = []
    for _ in range(16):
        sid = client.call(ECHO, body)
        sids.append(sid)
    client.read(0.5)
    peak = rss_kb(d.process.pid)
    assert served_meanwhile(d, v2) < 5
    # Four replies fit and wait; the other twelve are refused.
    refused = [s for s in sids if client.streams[s].status == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])]
    assert len(refused) == 12
    assert "not yet read: 8388608 bytes per connection" in client.streams[refused[0]].message
    # Those that waited are cancelled once limits.frame_timeout_ms passed
    # with their replies not sent.
    client.read(FRAME_TIMEOUT_MS / 1000 + 2)
    waiting = [s for s in sids if s not in refused]
    assert all(client.streams[s].cancelled() for s in waiting), {s: client.streams[s] for s in waiting}
    assert all(client.streams[s].data == 0 for s in sids)
    assert "its reply was not read within 3000 ms (limits.frame_timeout_ms)" in d.log_text()
    # What they held is given back (jemalloc returns freed pages within 5 s).
    deadline = time.monotonic() + 8
    while rss_kb(d.process.pid) > baseline * 1.1 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = rss_kb(d.process.pid)
    print(f"unread replies: RSS {baseline} kB before, {peak} kB at the peak, {after} kB after")
    assert after <= baseline * 1.1, f"RSS went from {baseline} kB to {after} kB"
    client.close()


def test_messages_being_received_are_bounded_all_together(start_daemon: Any, v2: Stubs) -> None:
    # gRPC's transport may hold 16 MiB of requests being received
    # (limits.max_frame_bytes_in_flight, at least two of the largest message):
    # four clients start four 4 MiB messages each, 64 MiB, and never end them.
    # (Their deadline is put out of the way: what is measured is the bound.)
    d = start_daemon("bodies-in-flight", config(60000).replace("limits: {", "limits: {max_frame_bytes_in_flight: " +
                                                          str(16 << 20) + ", "),
                      address_space=ADDRESS_SPACE)
    body = echo_request(v2, (4 << 20) // 4 - 256).SerializeToString()
    baseline = warm_rss_kb(d, v2, (4 << 20) // 4 - 256)
    start = time.monotonic()
    clients, closed = [], 0
    for _ in range(4):
        client = RawClient(d.v2_socket)
        clients.append(client)
        try:
            for _ in range(4):
                # The windows close once the transport holds its share: the
                # client waits a moment for more, and goes on to its next call.
                client.call(ECHO, body[:-1], announced=len(body), patience=0.2)
        except BrokenPipeError:
            # Past its share, gRPC closes connections with no call of theirs
            # received yet (a client's answer: reconnect).
            closed += 1
    peak = rss_kb(d.process.pid)
    attack = time.monotonic() - start
    # A client with a request of its own is served meanwhile.
    meanwhile = served_meanwhile(d, v2)
    for client in clients:
        client.close()
    deadline = time.monotonic() + 10
    while rss_kb(d.process.pid) > baseline * 1.1 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = rss_kb(d.process.pid)
    print(f"bodies in flight: RSS {baseline} kB before, {peak} kB at the peak, {after} kB after; "
          f"{closed} of 4 connections closed; the bystander served in {meanwhile * 1000:.1f} ms; attack {attack:.1f} s")
    # What the transport held: its 16 MiB share and its buffers' slack, not 64 MiB.
    assert peak - baseline < 32 << 10, f"RSS went from {baseline} kB to {peak} kB"
    assert after <= baseline * 1.1, f"RSS went from {baseline} kB to {after} kB"


def test_a_message_over_the_limit_is_let_in_no_further_than_the_limit(start_daemon: Any, v2: Stubs) -> None:
    # gRPC refuses a message over kserve.max_message_bytes (4 MiB here) once
    # it is whole, and grants windows for it up to about that size: one that
    # says it is 256 MiB, and would send 48 MiB, gets no further, and is
    # cancelled at limits.frame_timeout_ms instead of waiting for ever.
    d = start_daemon("oversized", config(), address_space=ADDRESS_SPACE)
    client = RawClient(d.v2_socket)
    baseline = rss_kb(d.process.pid)
    start = time.monotonic()
    sid = client.call(ECHO, bytes(48 << 20), announced=256 << 20, patience=1)
    stream = client.streams[sid]
    peak = rss_kb(d.process.pid)
    while time.monotonic() - start < FRAME_TIMEOUT_MS / 1000 + 5 and not (stream.cancelled() or stream.status):
        client.read(0.1)
    print(f"oversized: RSS {baseline} kB before, {peak} kB at the peak; ended after {time.monotonic() - start:.1f} s "
          f"({stream}); {stream.sent >> 20} MiB of it let in")
    assert stream.cancelled() or stream.status == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]), stream
    assert stream.sent < 8 << 20, f"{stream.sent} bytes let in"
    assert peak - baseline < 16 << 10, f"RSS went from {baseline} kB to {peak} kB"
    client.close()
