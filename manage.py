#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mirrorbench_site.settings")
    # First: the project's garbage-collector thresholds hold while Django loads too.
    import mirrorbench_site  # noqa: F401, I001  (before Django, not in isort's order)

    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
