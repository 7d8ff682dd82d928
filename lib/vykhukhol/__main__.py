"""``python -m vykhukhol`` is the same as the ``vykhukhol`` command."""

from vykhukhol.cli import main

raise SystemExit(main())
