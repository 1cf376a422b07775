"""``python -m gguf_construct``."""

import sys

from .commands.entry import main

sys.exit(main())
