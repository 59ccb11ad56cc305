import sys

from porter.check.harness.main import main

sys.exit(main(sys.argv[1:]))
