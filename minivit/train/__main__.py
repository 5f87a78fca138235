"""`python -m minivit.train ...`: the command line of `minivit.cli` (see `python -m minivit.train --help`)."""

import sys

from minivit.cli import main

if __name__ == "__main__":
    sys.exit(main())
