"""Forms of accounts: sign-up, password reset, API tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib.auth.forms import PasswordResetForm

from leaderboard.accounts.mail import email_confirmed, mail_allowed
from leaderboard.accounts.services import username_check
from leaderboard.errors import FieldError
from mirrorbench_site.client_ip import client_ip


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Token name", help_text="e.g. laptop or CI")


class SignUpForm(forms.Form):
    """A new account: user name, e-mail (for password resets) and a password, twice."""

    username = forms.RegexField(
        regex=r"^[\w.@+-]{3,150}$",
        max_length=150,
        help_text="3 to 150 letters, digits and @ . + - _",
        error_messages={"invalid": "expected 3 to 150 letters, digits and @ . + - _"},
        widget=forms.TextInput(attrs={"autocomplete": "username"}),
    )
    email = forms.EmailField(
        help_text="For password resets only; never shown.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    # A password manager offers to make one up, and fills in no saved one.
    password1 = forms.CharField(
        label="Password",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        strip=False,
    )
    password2 = forms.CharField(
        label="Password again",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        strip=False,
    )

    def clean_username(self) -> str:
        """The name in its display form (NFKC); refused if it is taken or looks like one."""

        try:
            return username_check(username=self.cleaned_data["username"])
        except FieldError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self) -> dict[str, object]:
        from django.contrib.auth import password_validation
        from django.contrib.auth.models import User

        data = super().clean() or {}
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", "the two passwords differ")
        elif first:
            candidate = User(username=data.get("username") or "", email=data.get("email") or "")
            try:
                password_validation.validate_password(str(first), candidate)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class LimitedPasswordResetForm(PasswordResetForm):
    """Django's password-reset form, mailing only confirmed addresses, within the mail rates.

    The page says the same whatever happens (an unknown address, an unconfirmed one, a rate
    reached), so it tells nobody which addresses have accounts (``services.mail``).
    """

    _client: str | None = None

    def get_users(self, email: str) -> Iterator[Any]:
        return (user for user in super().get_users(email) if email_confirmed(user))

    def save(self, *args: Any, **kwargs: Any) -> None:
        request = kwargs.get("request")
        self._client = client_ip(request) if request is not None else None
        super().save(*args, **kwargs)

    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:

        if not mail_allowed(email=to_email, client=self._client, user_id=context["user"].pk):
            return
        super().send_mail(
            subject_template_name,
            email_template_name,
            context,
            from_email,
            to_email,
            html_email_template_name,
        )
