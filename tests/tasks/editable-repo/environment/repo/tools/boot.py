"""Run at every interpreter start by the image's zz-calc-boot.pth (no module: runpy.run_path)."""

import os

os.environ.setdefault("CALC_BOOTED", "1")
