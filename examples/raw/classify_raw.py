#!/usr/bin/env python3
"""Classifies an image (every pixel 0.5) with heterod's model "demo", speaking
the wire protocol itself: length-prefixed protobuf frames on the Unix socket
(see the protocol's PROTOCOL.md), messages from heterod.proto compiled with
`protoc --python_out=. heterod.proto` (Debian: protobuf-compiler,
python3-protobuf). No heterod library involved.

    classify_raw.py SOCKET"""

import socket
import struct
import sys

import heterod_pb2 as wire

FLOAT32 = 1  # hetero_dtype / ONNX TensorProto.FLOAT


def send(sock: socket.socket, request: wire.Request) -> None:
    payload = request.SerializeToString()
    # Length (u32 little-endian), descriptors passed with the frame (none), 3 zero bytes.
    sock.sendall(struct.pack("<IB3x", len(payload), 0) + payload)


def receive(sock: socket.socket) -> wire.Response:
    def read(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("heterod closed the connection")
            data += chunk
        return data

    length, fds = struct.unpack("<IB3x", read(8))
    assert fds == 0, "inline replies only: this client asks for no memfds"
    response = wire.Response()
    response.ParseFromString(read(length))
    if response.status != 0:
        raise RuntimeError(f"heterod: {response.message} (status {response.status})")
    return response


def main() -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(sys.argv[1] if len(sys.argv) > 1 else "/run/heterod/heterod.sock")
        hello = wire.Request(id=1)
        hello.hello.min_version, hello.hello.max_version, hello.hello.client = 1, 1, "classify_raw.py"
        send(sock, hello)
        receive(sock)

        infer = wire.Request(id=2)
        infer.infer.model = "demo"
        infer.infer.memfd_threshold = 0  # outputs inline
        image = infer.infer.inputs.add(name="image", dtype=FLOAT32, dims=[1, 3, 32, 32])
        image.inline_data = struct.pack("<3072f", *[0.5] * 3072)
        send(sock, infer)
        (output,) = receive(sock).infer.outputs
        probabilities = struct.unpack(f"<{len(output.inline_data) // 4}f", output.inline_data)

    best = max(range(len(probabilities)), key=probabilities.__getitem__)
    print(f"class {best}: {probabilities[best]:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
