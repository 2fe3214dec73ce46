"""Print, as JSON, the sha256 of each path given (null when it does not exist) and of every file under each
directory given with a trailing slash (a key per file; the directory itself maps to the sorted list of its files)."""

import hashlib
import json
import os
import sys


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


out = {}
for arg in sys.argv[1:]:
    if arg.endswith("/"):
        found = []
        for top, _dirs, files in os.walk(arg):
            for name in files:
                path = os.path.join(top, name)
                found.append(path)
                out[path] = digest(path) if os.path.isfile(path) else "not a regular file"
        out[arg] = sorted(found)
    else:
        out[arg] = digest(arg) if os.path.isfile(arg) else None
print(json.dumps(out, sort_keys=True))
