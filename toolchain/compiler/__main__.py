"""`python -m toolchain.compiler` is the `mettle` command."""
import sys

from .cli import main

sys.exit(main())
