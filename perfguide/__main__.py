import sys

from perfguide.cli import main

sys.exit(main())
