"""Render the database into the static site: the same as `scoreboard build`."""

import sys

from pipeline.cli import main

if __name__ == "__main__":
    main(["build", *sys.argv[1:]])
