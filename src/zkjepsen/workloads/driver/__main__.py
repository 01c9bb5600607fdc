"""`python3 -m zkjepsen.workloads.driver RECIPE`: serve the client wire protocol on
stdin/stdout with kazoo and the recipe RECIPE (a registry name or package.module:Name)."""

import sys

from zkjepsen.workloads.driver.server import main

sys.exit(main(sys.argv[1:]))
