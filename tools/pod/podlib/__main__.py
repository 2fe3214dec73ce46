"""Run podctl: ``python3 tools/pod/podlib/__main__.py ARGS`` or, with tools/pod on sys.path, ``python3 -m podlib ARGS``."""

import os
import sys

if not __package__:
    # Run by file path: sys.path[0] is this package's directory; import the package from its parent instead.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from podlib.cli import main  # noqa: E402

sys.exit(main())
