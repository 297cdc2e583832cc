"""python -m fa3lite.bench: see fa3lite/bench/cli.py."""
import sys

from .cli import main

sys.exit(main())
