"""`python -m gpuscope ARGS` is `gpuscope ARGS`."""
import sys

from gpuscope import main

sys.exit(main())
