"""`python -m dash` runs the kdash command line."""

from dash.cli import main

raise SystemExit(main())
