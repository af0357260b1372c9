#!/usr/bin/env python3
"""Classifies an image (every pixel 0.5) with the demo model and prints the
best class: through heterod (classify.py SOCKET, the daemon's model "demo")
or in process (classify.py demo.onnx)."""

import sys

import numpy as np

import heterod


def main() -> int:
    target = sys.argv[1] if len(sys.argv) > 1 else "/run/heterod/heterod.sock"
    image = np.full((1, 3, 32, 32), 0.5, np.float32)
    try:
        if target.endswith(".onnx"):
            core = heterod.Core()
            model = core.compile_model(target, "CPU", shapes={"image": image.shape})
        else:
            core = heterod.Core.connect(target)
            model = core.open_model("demo")
        with core, model:
            probabilities = model.infer({"image": image})["probabilities"][0]
    except heterod.HeteroError as e:
        print(f"classify: {e.message}", file=sys.stderr)
        return 1
    best = int(probabilities.argmax())
    print(f"class {best}: {probabilities[best]:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
