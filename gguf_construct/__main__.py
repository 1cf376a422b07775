"""``python -m gguf_construct``."""

import sys

from .cli import main

sys.exit(main())
