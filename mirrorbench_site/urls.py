"""URL routes of the site."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from leaderboard.accounts.forms import LimitedPasswordResetForm
from leaderboard.pages import favicon

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api_urls")),
    # Django's, with a form that mails only confirmed addresses, within the mail rates.
    path(
        "accounts/password_reset/",
        auth_views.PasswordResetView.as_view(form_class=LimitedPasswordResetForm),
        name="password_reset",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("leaderboard.urls")),
]
