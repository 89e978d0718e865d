"""`python -m host_tools.cli`: the same as the `manipgen` command."""

from host_tools.cli import main

raise SystemExit(main())
