#!/usr/bin/env python3
"""`hetero partition` on a 100k-node chain whose policy names half of its
nodes one by one, as a user runs it: the plan follows the policy (names before
the glob rule after them, the unused op rule warned about). Matching every
node against every listed name took 93 s; the whole command now takes about
2 s of CPU time, two thirds of it reading the model. No timed assertion here:
Meson's timeout on this test guards against a return to anything quadratic,
and the times printed are for people.

    test_policy_scale.py HETERO MAKE_POLICY_SCALE [NODES [RUN]]

Prints "N passed, N failed"."""

import os
import resource
import subprocess
import sys
import tempfile
import time

passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"CHECK failed: {what}\n{detail}", file=sys.stderr)


def main(hetero, make, nodes, run):
    with tempfile.TemporaryDirectory(prefix="hetero-policy-scale-") as work:
        subprocess.run([make, work, str(nodes), str(run)], check=True)
        model, policy = os.path.join(work, "chain.onnx"), os.path.join(work, "policy.yaml")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        r = subprocess.run([hetero, "partition", model, "--device", "HETERO:CPU,CPU.1",
                            "--config", "CPU.device_count=2", "--policy", policy],
                           capture_output=True, text=True)
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        # CPU time too: on a busy machine the wall clock says more about the
        # neighbours than about heterod.
        print(f"hetero partition: {nodes} nodes, {nodes // 2} named in the policy: "
              f"{seconds:.2f} s ({cpu:.2f} s of CPU)")
        detail = f"exit {r.returncode}\nstderr: {r.stderr}\nstdout (start): {r.stdout[:2000]}"
        check(r.returncode == 0, "hetero partition succeeds", detail)
        lines = r.stdout.splitlines()
        parts = (nodes + run - 1) // run
        check(f"{parts} subgraphs, {parts - 1} tensor transfers between them" in lines,
              "one subgraph per run of nodes", detail)
        # Runs alternate, the first (unnamed, "node_*") on CPU, the second
        # (named) on CPU.1.
        heads = [line for line in lines if line.startswith("subgraph ")]
        check(len(heads) == parts and heads[0] == f"subgraph 0 on CPU: {run} nodes"
              and heads[1] == f"subgraph 1 on CPU.1: {run} nodes", "devices alternate by run", "\n".join(heads[:4]))
        second = " ".join(f"node_{i}" for i in range(run, 2 * run))
        check(f"  nodes:   {second}" in lines, "the named run is the second subgraph", detail)
        check(any(line.startswith("warning: ") and line.endswith("rule for CPU.1 matches no node of the model")
                  for line in lines), "the op rule that matches nothing is warned about", detail)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100000,
                  int(sys.argv[4]) if len(sys.argv) > 4 else 10))
