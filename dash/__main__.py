"""`python -m dash` runs the kdash command line."""

from dash.commands.cli import main

raise SystemExit(main())
