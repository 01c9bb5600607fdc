"""`python3 -m zkjepsen.client.drivers.python RECIPE`: serve the client wire protocol on
stdin/stdout with kazoo and the recipe RECIPE (a registry name or package.module:Name)."""

import sys

from zkjepsen.client.drivers.python.server import main

sys.exit(main(sys.argv[1:]))
