from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.models.signals import post_save

        from leaderboard import checks  # noqa: F401 (registers the system checks)
        from leaderboard.accounts.services import user_saved

        # Every account's name is compared with at sign-up, however it was made.
        post_save.connect(
            user_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="leaderboard.account_name"
        )
