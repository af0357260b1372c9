"""The v2 listeners: the Unix socket's access rules (file mode, SO_PEERCRED
lists), hostile connections (idle, never speaking, too many), TCP with TLS
and client certificates, the config's checks and a clean stop."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from conftest import CHANNEL_OPTIONS, DAEMON_MODELS, DEMO, HETEROD, MODELS, ROOT, Daemon, Stubs

MODELS_YAML = f"""
models:
  - {{name: demo, path: {DEMO}, shapes: {{image: [1, 3, 32, 32]}}}}
  - {{name: slow, path: {DAEMON_MODELS / "slow.onnx"}}}
"""


def live(channel: grpc.Channel, v2: Stubs, timeout: float = 10) -> bool:
    return v2.rpc.GRPCInferenceServiceStub(channel).ServerLive(v2.pb.ServerLiveRequest(), timeout=timeout).live


def demo_request(v2: Stubs) -> Any:
    r = v2.pb.ModelInferRequest(model_name="demo")
    r.inputs.add(name="image", datatype="FP32", shape=[1, 3, 32, 32])
    r.raw_input_contents.append(np.zeros((1, 3, 32, 32), np.float32).tobytes())
    return r


# ---- Access ---------------------------------------------------------------------------------


def test_socket_mode_and_a_peer_uid_not_allowed(start_daemon: Any, v2: Stubs) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to connect as another user")
    # Anyone may open the socket; only uid 4242 (and root, and the daemon's
    # own user) may talk.
    d = start_daemon("access", """
socket: {path: "@SOCKET@"}
kserve: {socket: "@V2_SOCKET@", mode: "0666"}
access: {allowed_uids: [4242]}
""" + MODELS_YAML)
    assert os.stat(d.v2_socket).st_mode & 0o777 == 0o666
    client = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(v2.dir)!r})
        import grpc, grpc_predict_v2_pb2 as pb, grpc_predict_v2_pb2_grpc as rpc
        stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel("unix:{d.v2_socket}"))
        try:
            stub.ServerLive(pb.ServerLiveRequest(), timeout=10)
            print("ANSWERED")
        except grpc.RpcError as e:
            print(e.code().name, e.details())
    """)
    r = subprocess.run(["/usr/bin/python3", "-c", client], user=65534, group=65534, extra_groups=[],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.stdout.startswith("PERMISSION_DENIED") and "is not allowed" in r.stdout, r.stdout + r.stderr
    assert "uid 65534 is not allowed" in d.log_text()
    with d.channel() as channel:  # root still is
        assert live(channel, v2)


def test_one_uid_holds_at_most_its_share_of_connections(start_daemon: Any, v2: Stubs) -> None:
    """A user who connects and idles (or reconnects in a loop) holds at most
    limits.max_connections_per_uid of the v2 slots; another user still gets
    in."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to connect as other users")
    d = start_daemon("per-uid", """
socket: {path: "@SOCKET@"}
kserve: {socket: "@V2_SOCKET@", mode: "0666"}
limits: {max_connections: 24, max_connections_per_uid: 4}
""" + MODELS_YAML)

    def client(connections: int, hold: bool) -> str:
        # A channel of its own per connection: gRPC shares connections
        # between channels to one target otherwise.
        return textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(v2.dir)!r})
            import grpc, grpc_predict_v2_pb2 as pb, grpc_predict_v2_pb2_grpc as rpc
            channels, live = [], 0
            for k in range({connections}):
                channel = grpc.insecure_channel("unix:{d.v2_socket}", options=[("grpc.use_local_subchannel_pool", 1)])
                channels.append(channel)
                try:
                    live += rpc.GRPCInferenceServiceStub(channel).ServerLive(pb.ServerLiveRequest(), timeout=5).live
                except grpc.RpcError:
                    pass
            print(live, flush=True)
            if {hold}:
                sys.stdin.read()
        """)

    hog = subprocess.Popen(["/usr/bin/python3", "-c", client(12, True)], user=65534, group=65534, extra_groups=[],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        assert hog.stdout is not None
        assert hog.stdout.readline().strip() == "4"
        other = subprocess.run(["/usr/bin/python3", "-c", client(1, False)], user=4242, group=4242,
                               extra_groups=[], capture_output=True, text=True, timeout=60, cwd="/")
        assert other.stdout.strip() == "1", other.stdout + other.stderr
    finally:
        hog.communicate(timeout=60)
    assert "limits.max_connections_per_uid = 4" in d.log_text()


def test_only_a_models_owner_unloads_or_replaces_it(start_daemon: Any, v2: Stubs) -> None:
    """A model belongs to the config or to the uid that loaded it: another
    allowed uid can neither unload nor replace it, so the next client of
    `demo` never gets an impostor's outputs."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to connect as another user")
    repo = ROOT / "owned-repo"
    repo.mkdir(mode=0o755)
    for name in ("roots", "theirs"):
        shutil.copy(MODELS / "affine.onnx", repo / f"{name}.onnx")
        (repo / f"{name}.onnx").chmod(0o644)
    d = start_daemon("owned", f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@", mode: "0666"}}
model_dirs: [{repo}]
""" + MODELS_YAML)
    pb = v2.pb
    with d.channel() as channel:
        v2.rpc.GRPCInferenceServiceStub(channel).RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="roots"))
    client = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(v2.dir)!r})
        import grpc, grpc_predict_v2_pb2 as pb, grpc_predict_v2_pb2_grpc as rpc
        stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel("unix:{d.v2_socket}"))
        for call, name in [("Unload", "demo"), ("Unload", "roots"), ("Load", "roots"),
                           ("Load", "theirs"), ("Unload", "theirs"), ("Load", "theirs")]:
            method = getattr(stub, "RepositoryModel" + call)
            request = getattr(pb, "RepositoryModel" + call + "Request")(model_name=name)
            try:
                method(request, timeout=60)
                print(call, name, "OK")
            except grpc.RpcError as e:
                print(call, name, e.code().name, e.details())
    """)
    r = subprocess.run(["/usr/bin/python3", "-c", client], user=65534, group=65534, extra_groups=[],
                       capture_output=True, text=True, timeout=120, cwd="/")
    lines = r.stdout.splitlines()
    assert len(lines) == 6, r.stdout + r.stderr
    assert lines[0].startswith("Unload demo PERMISSION_DENIED") and "reload" in lines[0], lines[0]
    assert lines[1].startswith("Unload roots PERMISSION_DENIED") and "loaded by uid 0" in lines[1], lines[1]
    assert lines[2].startswith("Load roots PERMISSION_DENIED") and "replace" in lines[2], lines[2]
    assert lines[3:] == ["Load theirs OK", "Unload theirs OK", "Load theirs OK"], r.stdout
    with d.channel() as channel:
        stub = v2.rpc.GRPCInferenceServiceStub(channel)
        assert stub.ModelInfer(demo_request(v2), timeout=30).model_name == "demo"
        # Root unloads another uid's model, never the config's.
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="theirs"))
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="demo"))
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_a_v2_load_is_a_clients_load(start_daemon: Any, v2: Stubs) -> None:
    """A model a v2 client loads from the repository is that client's, under
    the limits the native LoadModel applies (Server::admit_client_model):
    here, one model per uid, counted across both front ends, a model it
    replaces not counted against itself."""
    repo = ROOT / "client-repo"
    repo.mkdir(mode=0o755)
    for name in ("one", "two"):
        shutil.copy(MODELS / "affine.onnx", repo / f"{name}.onnx")
    d = start_daemon("client-loads", f"""
socket: {{path: "@SOCKET@"}}
kserve: {{socket: "@V2_SOCKET@"}}
model_dirs: [{repo}]
limits: {{max_models_per_client: 1}}
""" + MODELS_YAML)
    pb = v2.pb
    with d.channel() as channel:
        stub = v2.rpc.GRPCInferenceServiceStub(channel)
        stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="one"), timeout=60)
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="two"), timeout=60)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "has 1 models loaded (limits.max_models_per_client)" in e.value.details(), e.value.details()
        stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="one"), timeout=60)
    # The native protocol counts the same models for the same uid.
    r = subprocess.run([os.environ["HETERO"], "load", "--connect", d.socket, "two", str(repo / "two.onnx")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "limits.max_models_per_client" in r.stderr, r.stdout + r.stderr


def test_default_socket_mode(start_daemon: Any) -> None:
    d = start_daemon("mode", 'socket: {path: "@SOCKET@"}\nkserve: {socket: "@V2_SOCKET@"}\n' + MODELS_YAML)
    assert os.stat(d.v2_socket).st_mode & 0o777 == 0o660


# ---- Hostile connections ----------------------------------------------------------------------

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\0\0\0\x04\0\0\0\0\0"  # and an empty SETTINGS frame


def closed_by_peer(s: socket.socket, timeout: float) -> bool:
    """Reads until the daemon closes `s` (True) or `timeout` passes."""
    s.settimeout(0.2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except ConnectionResetError:
            return True
    return False


def test_idle_and_silent_connections(start_daemon: Any, v2: Stubs) -> None:
    d = start_daemon("idle", """
socket: {path: "@SOCKET@"}
kserve: {socket: "@V2_SOCKET@", idle_timeout_ms: 500}
limits: {max_connections: 16}
""" + MODELS_YAML)
    # 15 connections that hold a place and do nothing: 8 never say a word,
    # 7 open HTTP/2 and then idle.
    idle = []
    for k in range(15):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(d.v2_socket)
        if k >= 8:
            s.sendall(HTTP2_PREFACE)
        idle.append(s)
    # They block nobody: the 16th client is answered, promptly.
    with d.channel() as channel:
        stub = v2.rpc.GRPCInferenceServiceStub(channel)
        start = time.monotonic()
        assert stub.ModelInfer(demo_request(v2), timeout=10).outputs
        assert time.monotonic() - start < 5
        # One more is over limits.max_connections: closed at once.
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.connect(d.v2_socket)
        assert closed_by_peer(extra, 5)
        assert "too many connections (limits.max_connections = 16)" in d.log_text()
        # After kserve.idle_timeout_ms with no call, every idle one is closed,
        # those that never spoke HTTP/2 included.
        for s in idle:
            assert closed_by_peer(s, 10)
            s.close()
        # A client's idle channel was closed too: once its channel has seen
        # that, it reconnects unaware. (A call racing the close meets the
        # dead connection first, UNAVAILABLE "Broken pipe", as any gRPC
        # client can when a server closes an idle connection.)
        left_ready = threading.Event()

        def on_state(state: grpc.ChannelConnectivity) -> None:
            if state != grpc.ChannelConnectivity.READY:
                left_ready.set()

        channel.subscribe(on_state)
        assert left_ready.wait(10), "the client's channel never saw its idle connection closed"
        channel.unsubscribe(on_state)
        assert stub.ModelInfer(demo_request(v2), timeout=10).outputs


# ---- TCP --------------------------------------------------------------------------------------


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki() -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    d = ROOT / "pki"
    d.mkdir()
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=heterod test CA",
            "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=heterod test {name}",
                "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"))
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
                "-CAcreateserial", "-days", "2", "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"))
    return d


def tcp_port(d: Daemon) -> int:
    m = re.search(r"listening on tcp 127\.0\.0\.1:(\d+)", d.wait_log("listening on tcp"))
    assert m
    return int(m.group(1))


def test_tls(start_daemon: Any, v2: Stubs, pki: Path) -> None:
    d = start_daemon("tls", f"""
socket: {{path: "@SOCKET@"}}
kserve: {{tcp: "127.0.0.1:0", tls_cert: {pki / "server.pem"}, tls_key: {pki / "server.key"}}}
""" + MODELS_YAML)
    port = tcp_port(d)
    assert "(TLS)" in d.log_text()
    credentials = grpc.ssl_channel_credentials(root_certificates=(pki / "ca.pem").read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=CHANNEL_OPTIONS) as channel:
        assert live(channel, v2)
        assert v2.rpc.GRPCInferenceServiceStub(channel).ModelInfer(demo_request(v2), timeout=10).outputs
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, pytest.raises(grpc.RpcError) as e:
        live(channel, v2, timeout=3)
    assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_tls_client_certificates(start_daemon: Any, v2: Stubs, pki: Path) -> None:
    d = start_daemon("mtls", f"""
socket: {{path: "@SOCKET@"}}
kserve:
  tcp: "127.0.0.1:0"
  tls_cert: {pki / "server.pem"}
  tls_key: {pki / "server.key"}
  tls_client_ca: {pki / "ca.pem"}
""" + MODELS_YAML)
    port = tcp_port(d)
    assert "client certificates required" in d.log_text()
    ca = (pki / "ca.pem").read_bytes()
    with_cert = grpc.ssl_channel_credentials(ca, (pki / "client.key").read_bytes(), (pki / "client.pem").read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{port}", with_cert) as channel:
        assert live(channel, v2)
    with grpc.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(ca)) as channel, \
            pytest.raises(grpc.RpcError) as e:
        live(channel, v2, timeout=3)
    assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_insecure_tcp_when_allowed(start_daemon: Any, v2: Stubs) -> None:
    d = start_daemon("plain-tcp", """
socket: {path: "@SOCKET@"}
kserve: {tcp: "127.0.0.1:0", allow_insecure_tcp: true}
""" + MODELS_YAML)
    port = tcp_port(d)
    assert "WITHOUT TLS" in d.log_text()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        assert live(channel, v2)


# ---- Config -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kserve, message", [
    ('{tcp: "127.0.0.1:8001"}', ":2: 'kserve.tcp' without TLS would let anyone on the network run models"),
    ('{socket: v2.sock, colour: blue}', ":2: unknown key 'colour' in kserve"),
    ('{socket: v2.sock, mode: "0999"}', ":2: 'kserve.mode' must be octal permissions"),
    ('{tcp: "8001", allow_insecure_tcp: true}', ":2: 'kserve.tcp' must be HOST:PORT"),
    ('{tcp: "127.0.0.1:8001", allow_insecure_tcp: yes please}', ":2: 'kserve.allow_insecure_tcp' must be true or false"),
    ('{tcp: "127.0.0.1:8001", tls_cert: missing.pem, tls_key: missing.key}',
     ":2: 'kserve.tls_cert' is not a readable file: {dir}/missing.pem: No such file or directory"),
    ('{tcp: "127.0.0.1:8001", tls_cert: /dev/zero, tls_key: heterod.yaml}',
     ":2: 'kserve.tls_cert' is not a readable file: /dev/zero is a character device, not a regular file"),
    ('{tcp: "127.0.0.1:8001", tls_cert: heterod.yaml}', ":2: 'kserve.tls_cert' and 'kserve.tls_key' go together"),
    ('{socket: v2.sock, tls_cert: heterod.yaml, tls_key: heterod.yaml}', ":2: 'kserve.tls_cert' is for kserve.tcp"),
    ('{socket: v2.sock, max_message_bytes: 10}', ":2: 'kserve.max_message_bytes' must be a whole number from 4096"),
    ('{socket: v2.sock, idle_timeout_ms: 0}', ":2: 'kserve.idle_timeout_ms' must be a whole number from 100"),
    ('{socket: "' + "/x" * 60 + '"}', ":2: 'kserve.socket' '" + "/x" * 60 + "' is longer than a Unix socket path"),
])
def test_config_errors(tmp_path: Path, kserve: str, message: str) -> None:
    config = tmp_path / "heterod.yaml"
    config.write_text(f"socket: {{path: {tmp_path}/heterod.sock}}\nkserve: {kserve}\n")
    r = subprocess.run([HETEROD, "--config", str(config), "--check"], capture_output=True, text=True)
    assert r.returncode == 1 and str(config) + message.format(dir=tmp_path) in r.stderr, r.stderr


# ---- Lifecycle --------------------------------------------------------------------------------


def test_sigterm_answers_calls_in_flight(v2: Stubs) -> None:
    d = Daemon("stop", 'socket: {path: "@SOCKET@"}\nkserve: {socket: "@V2_SOCKET@"}\n' + MODELS_YAML)
    try:
        d.wait_log("serving ")
        # A second daemon cannot take the v2 socket from a live one.
        other = Daemon("stop-rival", f'socket: {{path: "@SOCKET@"}}\nkserve: {{socket: "{d.v2_socket}"}}\n')
        assert other.process.wait(timeout=60) == 1
        assert f"another daemon is answering on {d.v2_socket}" in other.log_text()
        with d.channel() as channel:
            stub = v2.rpc.GRPCInferenceServiceStub(channel)
            x = v2.pb.ModelInferRequest(model_name="slow")
            x.inputs.add(name="x", datatype="FP32", shape=[1, 256, 256])
            x.raw_input_contents.append(np.zeros((1, 256, 256), np.float32).tobytes())
            calls = [stub.ModelInfer.future(x) for _ in range(12)]
            time.sleep(0.2)
            d.process.send_signal(signal.SIGTERM)
            for c in calls:
                assert c.result(timeout=60).outputs
        assert d.process.wait(timeout=60) == 0
        assert not os.path.exists(d.v2_socket)
    finally:
        d.stop()
