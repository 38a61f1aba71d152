"""``python manage.py token USERNAME [--name NAME]``: print a new API token for that user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.errors import FieldError
from leaderboard.submissions.tokens import api_token_create


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print its key (shown once; only its hash is "
        "kept). For administrators and scripts; users create theirs on their profile page."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="command line", help="what the token is for")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        try:
            user = User.objects.get(username=options["username"])
        except User.DoesNotExist:
            raise CommandError(f"no user named {options['username']!r}") from None
        try:
            new = api_token_create(user=user, name=options["name"])
        except FieldError as exc:
            raise CommandError(f"--{exc.field}: {exc.message}") from None
        self.stdout.write(new.key)
