"""`python -m compiler.cli`: the `ziggurat` command."""

import sys

from compiler.cli.main import main

sys.exit(main())
