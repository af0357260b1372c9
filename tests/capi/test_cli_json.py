#!/usr/bin/env python3
"""Every JSON document the hetero CLI prints, read back by a real JSON parser:
devices (a driver module whose failure reason holds quotes, backslashes and a
tab), bench (a model path with quotes and backslashes), partition (node and
tensor names that need escaping, and one that is not UTF-8) and blob info.
Statistics come from the daemon (tests/daemon/test_cli_connect.py).

    test_cli_json.py HETERO LIBHETERO FIXTURE_DIR ODD_REASON_DRIVER

Prints "N passed, N failed"."""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as cli  # noqa: E402  (check, hetero, show)

# What tests/fixtures/bad_drivers.cpp (FIXTURE_KIND 5) says when it fails.
ODD_REASON = 'no "FAKE" runtime in C:\\fake\\lib\\\t(after a tab)'
# The node names of odd_names.onnx (tests/capi/make_test_model.cpp); the byte
# that is not UTF-8 comes back as U+FFFD.
ODD_NODES = ['MatMul "quoted" C:\\dir\\', "Add\tafter a tab", "Relu \ufffd not UTF-8"]
ODD_TENSOR = 'x"w\\'


def parsed(r, what):
    """The JSON document on stdout, or None after a failed check."""
    try:
        doc = json.loads(r[1])
        cli.check(r[0] == 0 and r[1].count("\n") == 1, f"{what}: one line, exit 0", cli.show(r))
        return doc
    except ValueError as e:
        cli.check(False, f"{what} parses as JSON: {e}", cli.show(r))
        return None


def main(fixtures, odd_driver):
    tiny = os.path.join(fixtures, "tiny.onnx")
    work = tempfile.mkdtemp(prefix="hetero-cli-json-")
    check = cli.check

    d = parsed(cli.hetero("devices", "--json", "--driver-path", odd_driver), "devices --json")
    if d:
        check(d["devices"] and all(x["name"] and x["full_name"] for x in d["devices"]), "devices listed", str(d))
        odd = [f for f in d["driver_failures"] if ODD_REASON in f["reason"]]
        check(len(odd) == 1 and odd[0]["path"].endswith("hetero_driver_odd_reason.so"),
              "the failure reason, escaped and read back", str(d["driver_failures"]))

    odd_path = os.path.join(work, 'a "quoted" dir\\', "tiny.onnx")
    os.makedirs(os.path.dirname(odd_path))
    shutil.copy(tiny, odd_path)
    b = parsed(cli.hetero("bench", odd_path, "--iterations", "3", "--warmup", "0", "--json"), "bench --json")
    if b:
        check(b["model"] == odd_path and b["device"] == "CPU" and b["iterations"] == 3, "bench names the model", str(b))

    plan = parsed(cli.hetero("partition", os.path.join(fixtures, "odd_names.onnx"), "--device", "HETERO:CPU.1,CPU",
                             "--config", "CPU.device_count=2", "--config", "CPU.1:ops=MatMul", "--json"),
                  "partition --json")
    if plan:
        nodes = [n for s in plan["subgraphs"] for n in s["nodes"]]
        check(nodes == ODD_NODES, "node names read back", str(nodes))
        check(plan["subgraphs"][0]["outputs"] == [ODD_TENSOR], "tensor names read back", str(plan["subgraphs"]))

    blob = os.path.join(work, "tiny.blob")
    r = cli.hetero("compile", tiny, "--config", "optimize=true", "-o", blob)
    check(r[0] == 0, "compile a blob", cli.show(r))
    info = parsed(cli.hetero("blob", "info", "--json", blob), "blob info --json")
    if info:
        check(info["device"] == "CPU" and info["driver"] == "CPU" and info["this_library"] is True
              and info["size"] == os.path.getsize(blob), "blob info fields", str(info))
        check({"key": "optimize", "value": "true"} in info["config"] and len(info["model_sha256"]) == 64
              and [s["name"] for s in info["sections"]] == ["driver"], "blob info config and sections", str(info))
    r = cli.hetero("blob", "info", blob, "--json", "extra")
    check(r[0] == 2 and "extra" in r[2], "blob info takes one blob", cli.show(r))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print("usage: test_cli_json.py HETERO LIBHETERO FIXTURE_DIR ODD_REASON_DRIVER", file=sys.stderr)
        sys.exit(2)
    cli.HETERO = sys.argv[1]
    main(sys.argv[3], sys.argv[4])
    print(f"{cli.passed} passed, {cli.failed} failed")
    sys.exit(1 if cli.failed else 0)
