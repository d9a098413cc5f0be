import sys

from perfguide.cli import entry

sys.exit(entry())
