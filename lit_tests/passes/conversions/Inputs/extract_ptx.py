"""Print the PTX of the first `#gpu.object` in an MLIR file (mlir-opt's gpu-module-to-binary
output): its `assembly = "..."` string with MLIR's escapes (\\XX hex, \\\\, \\") undone."""

import re
import sys

text = sys.stdin.read()
found = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if found is None:
    sys.exit('no assembly = "..." in the input')
escaped = found.group(1)
sys.stdout.write(
    re.sub(
        r"\\([0-9A-Fa-f]{2}|\\|\")",
        lambda m: m.group(1) if len(m.group(1)) == 1 else chr(int(m.group(1), 16)),
        escaped,
    )
)
