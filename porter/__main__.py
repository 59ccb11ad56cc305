import sys

from porter.cli import main

sys.exit(main(sys.argv[1:]))
