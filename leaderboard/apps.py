from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.models.signals import post_migrate, post_save

        from leaderboard import checks  # noqa: F401 (registers the system checks)
        from leaderboard.accounts.services import user_saved
        from leaderboard.search.index import search_index_after_migrate

        # Every account's name is compared with at sign-up, however it was made.
        post_save.connect(
            user_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="leaderboard.account_name"
        )
        # SQLite rebuilds a table to alter it, dropping its triggers: put the search index's
        # back (and refill it) after every migrate.
        post_migrate.connect(
            search_index_after_migrate, sender=self, dispatch_uid="leaderboard.search_index"
        )
