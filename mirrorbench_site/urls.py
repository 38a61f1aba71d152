"""URL routes of the site."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.views import favicon

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("leaderboard.urls")),
]
