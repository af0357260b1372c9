"""The installed python3-heterod, as a user of the packages runs it.

  query_installed.py in-process MODEL IMAGE.npy OUT.npy
      libhetero0 alone: its CPU driver, and no other, found; the demo model
      compiled and run in this process on the CPU; writes its output.
  query_installed.py daemon SOCKET IMAGE.npy OUT.npy
      the installed heterod: the demo model it serves, run through it.

Run by /usr/bin/python3 from a directory outside the source tree, with no
HETERO_LIB or PYTHONPATH: the package and the library must be the ones the
Debian packages installed, which this checks before anything else.
"""

import sys

import numpy as np

import heterod

INSTALLED_PACKAGE = "/usr/lib/python3/dist-packages/heterod/"


def loaded_libhetero() -> str:
    """The path of the libhetero.so.0 this process mapped."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libhetero.so" in line:
                return line.split()[-1]
    return "(none)"


def main() -> int:
    mode, target, image_path, out_path = sys.argv[1:5]
    if not heterod.__file__.startswith(INSTALLED_PACKAGE):
        print(f"imported {heterod.__file__}, not the installed package under {INSTALLED_PACKAGE}")
        return 1
    image = np.load(image_path)

    if mode == "in-process":
        with heterod.Core() as core:
            names = [device.name for device in core.devices]
            print(f"in process: devices {names}, library {loaded_libhetero()}")
            # Only libhetero0's own driver: no other package's, and none of
            # the build tree it came from.
            if names != ["CPU"]:
                print("libhetero0 alone should have the CPU device and no other")
                return 1
            compiled = core.compile_model(target, device="CPU", shapes={"image": image.shape})
            result = compiled.infer({"image": image})["probabilities"]
    else:
        with heterod.Core.connect(target) as core:
            served = {m.name: m.state for m in core.models()}
            print(f"through {target}: models {served}, library {loaded_libhetero()}")
            if served.get("demo") != "ready":
                print("the installed config's demo model is not served")
                return 1
            with core.open_model("demo") as model, model.create_infer_request() as request:
                result = request.infer(image)["probabilities"]

    if not loaded_libhetero().startswith("/usr/lib/"):
        print(f"loaded {loaded_libhetero()}, not the installed libhetero.so.0")
        return 1
    print(f"probabilities {np.array2string(result.ravel(), precision=4)}")
    np.save(out_path, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
