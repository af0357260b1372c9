"""A user's script in the README's style, checked by mypy --strict (the
python-user-types test, never run): inside each `with`, the names have the
package's real types, not Any, and assert_type fails the check if not."""

from __future__ import annotations

from typing import assert_type

import numpy as np

import heterod

image = np.zeros((1, 3, 32, 32), np.float32)

with heterod.Core() as core:
    assert_type(core, heterod.Core)
    with core.compile_model("demo.onnx", device="CPU", shapes={"image": (1, 3, 32, 32)}) as compiled:
        assert_type(compiled, heterod.CompiledModel)
        outputs = compiled.infer({"image": image}, output_names=["probabilities"])
        assert_type(outputs, dict[str, heterod.dtypes.Array])
        assert_type(compiled.inputs[0], heterod.Port)

with heterod.Core.connect("/run/heterod/heterod.sock") as remote:
    assert_type(remote, heterod.Core)
    with remote.open_model("demo") as model, model.create_infer_request() as request:
        assert_type(model, heterod.CompiledModel)
        assert_type(request, heterod.InferRequest)
        print(request.infer(image)["probabilities"])

try:
    heterod.Core().compile_model("missing.onnx")
except FileNotFoundError as e:
    print(e.filename)
except heterod.HeteroError as e:
    assert_type(e.status, heterod.Status | int)
