"""Validation of the leaderboard's query parameters (filters and sorting)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib.auth.forms import PasswordResetForm
from django.core.validators import MaxValueValidator

from evaluation.registry import PROVIDERS
from leaderboard.models import ModelEntry, Run
from leaderboard.selectors import SORT_KEYS, LeaderboardFilters
from simulation.versions import BENCHMARK_VERSION, KNOWN_VERSIONS, RETIRED_VERSIONS


class LeaderboardQueryForm(forms.Form):
    """The GET parameters of a table page, its CSV and its API: all optional."""

    kind = forms.MultipleChoiceField(choices=ModelEntry.Kind.choices, required=False)
    source = forms.MultipleChoiceField(choices=Run.Source.choices, required=False)
    params_min = forms.FloatField(required=False, min_value=0, label="Min. parameters (B)")
    params_max = forms.FloatField(required=False, min_value=0, label="Max. parameters (B)")
    q = forms.CharField(required=False, max_length=100, label="Search")
    sort = forms.ChoiceField(choices=[(k, k) for k in SORT_KEYS], required=False)
    order = forms.ChoiceField(choices=[("asc", "asc"), ("desc", "desc")], required=False)
    version = forms.ChoiceField(
        choices=[(v, v) for v in (*KNOWN_VERSIONS, *RETIRED_VERSIONS)],
        required=False,
        label="Benchmark version",
        help_text=f"Defaults to the current version, {BENCHMARK_VERSION}.",
    )
    rendered_by = forms.ChoiceField(
        choices=[("mujoco", "mujoco"), ("isaac", "isaac")],
        required=False,
        label="Renderer",
        help_text="mujoco: runs whose agents saw this site's MuJoCo frames; isaac: Isaac Sim's "
        "(the paper's reported rows, and runs rendered with MIRRORBENCH_RENDERER=isaac).",
    )
    baselines = forms.ChoiceField(
        choices=[("show", "show")],
        required=False,
        label="Show every baseline",
        help_text="show: the sanity-check baselines (the oracle) too; hidden by default.",
    )
    ci = forms.ChoiceField(
        choices=[("show", "show")],
        required=False,
        label="Show intervals",
        help_text="show: each score's 95% interval as a half-width beside it (pages only).",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        low, high = data.get("params_min"), data.get("params_max")
        if low is not None and high is not None and low > high:
            self.add_error("params_max", "must be at least params_min")
        return data

    def filters(self) -> LeaderboardFilters:
        """Return the validated filters (call after is_valid())."""
        data = self.cleaned_data
        sort = data.get("sort") or "rank"
        order = data.get("order") or ("asc" if sort in ("rank", "model") else "desc")
        return LeaderboardFilters(
            kinds=tuple(data.get("kind") or ()),
            sources=tuple(data.get("source") or ()),
            params_min=data.get("params_min"),
            params_max=data.get("params_max"),
            q=(data.get("q") or "").strip(),
            sort=sort,
            descending=order == "desc",
            version=data.get("version") or BENCHMARK_VERSION,
            renderer=data.get("rendered_by") or "",
            baselines=data.get("baselines") == "show",
            intervals=data.get("ci") == "show",
        )

    def error_text(self) -> str:
        """Return every error as 'field: message' lines, naming what was expected."""
        lines = []
        for field, errors in self.errors.items():
            for error in errors:
                lines.append(f"{field}: {error}")
        return "\n".join(lines)


class HostedEvaluationForm(forms.Form):
    """What a signed-in user with permission submits to evaluate an API model on the server."""

    SCENE_SETS = [
        ("all", "All 66 scenes"),
        ("human", "Human track (48)"),
        ("robot", "Robot track (18)"),
    ]

    provider = forms.ChoiceField(choices=list(PROVIDERS.items()))
    base_url = forms.URLField(required=False, label="Base URL", assume_scheme="https")
    model = forms.CharField(max_length=200, label="Model name at the provider")
    entry_name = forms.CharField(
        max_length=200,
        required=False,
        label="Leaderboard name",
        help_text="default: the model name",
    )
    kind = forms.ChoiceField(
        choices=[(k, v) for k, v in ModelEntry.Kind.choices if k in ("proprietary", "open-weights")]
    )
    params_b = forms.FloatField(required=False, min_value=0, label="Parameters (billions)")
    api_key = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        max_length=500,
        label="API key",
        help_text="Encrypted at rest and erased when the run ends.",
    )
    levels = forms.TypedMultipleChoiceField(
        choices=[
            ("0", "Level 0: mirror disclosed, with a reasoning template"),
            ("1", "Level 1: mirror disclosed"),
            ("2", "Level 2: the mirror is never mentioned"),
            ("3", "Level 3: neither the mirror nor the body"),
        ],
        coerce=int,
        initial=["0", "1", "2", "3"],
        widget=forms.CheckboxSelectMultiple,
        help_text="The leaderboard ranks runs of all four levels on all 66 scenes.",
    )
    scenes = forms.ChoiceField(choices=SCENE_SETS, initial="all", widget=forms.RadioSelect)
    private = forms.BooleanField(required=False, label="Keep this run private")


class EpisodeListForm(forms.Form):
    """The GET parameters of a run's episode list: all optional."""

    level = forms.TypedChoiceField(
        choices=[("", "All levels")] + [(str(level), f"Level {level}") for level in range(4)],
        coerce=int,
        empty_value=None,
        required=False,
    )
    track = forms.ChoiceField(
        choices=[("", "Both tracks"), ("human", "Human"), ("robot", "Robot")], required=False
    )
    outcome = forms.ChoiceField(
        choices=[
            ("", "Any outcome"),
            ("success", "Reached the mark"),
            ("failure", "Did not reach it"),
            ("confused", "Mirror-confused"),
            ("error", "Ended in error"),
        ],
        required=False,
    )
    scene = forms.CharField(required=False, max_length=100, label="Scene")
    page = forms.IntegerField(required=False, min_value=1, max_value=10_000)

    def __init__(self, *args: object, scene_ids: list[str] | None = None, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._scene_ids = scene_ids or []

    def clean_scene(self) -> str:
        scene = (self.cleaned_data.get("scene") or "").strip()
        if scene and scene not in self._scene_ids:
            raise forms.ValidationError(
                f"expected one of this run's scene ids (e.g. {self._scene_ids[0]}), got {scene!r}"
                if self._scene_ids
                else "this run has no episodes"
            )
        return scene


class ReplayStepForm(forms.Form):
    """``?step=N`` of a replay: which view to open (0 is the start)."""

    step = forms.IntegerField(required=False, min_value=0)

    def __init__(self, *args: object, last: int, **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["step"].validators.append(
            MaxValueValidator(
                last, message=f"expected a step from 0 to {last} (this episode's last view)"
            )
        )


SUBMISSION_KINDS = [
    (k, v) for k, v in ModelEntry.Kind.choices if k in ("proprietary", "open-weights", "human")
]


class SubmissionMetadataForm(forms.Form):
    """The model entry a submitted bundle goes to (the fields every door asks for)."""

    model_name = forms.CharField(max_length=200, label="Model name")
    kind = forms.ChoiceField(choices=SUBMISSION_KINDS, initial="open-weights")
    organisation = forms.CharField(max_length=200, required=False)
    params_b = forms.FloatField(
        required=False, min_value=0, max_value=1e6, label="Parameters (billions)"
    )
    link = forms.URLField(
        max_length=500, required=False, assume_scheme="https", label="Link to code or paper"
    )
    reproduce_provider = forms.ChoiceField(
        choices=[("", "Do not re-run")] + [(k, v) for k, v in PROVIDERS.items()],
        required=False,
        label="Re-run a sample with",
        help_text="Name the API model that produced the bundle and the server re-runs a random "
        "sample of its episodes to compare (the same rules as hosted runs).",
    )
    reproduce_model = forms.CharField(
        max_length=200, required=False, label="Model name at the provider"
    )
    reproduce_base_url = forms.URLField(
        max_length=500, required=False, assume_scheme="https", label="Base URL of its API"
    )
    reproduce_api_key = forms.CharField(
        max_length=500,
        required=False,
        widget=forms.PasswordInput(render_value=False),
        label="API key for the re-run",
        help_text="Encrypted at rest and erased when the re-run ends.",
    )


class SubmissionForm(SubmissionMetadataForm):
    """The web form: the metadata and the results bundle file."""

    bundle = forms.FileField(
        label="Results bundle",
        help_text="The .jsonl file that `mirrorbench run` wrote.",
        allow_empty_file=False,
    )
    field_order = ["bundle", "model_name", "kind", "organisation", "params_b", "link"]
    # The reproduction fields follow, in their declared order.


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Token name", help_text="e.g. laptop or CI")


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("refuse", "Refuse"), ("flag", "Flag")]
    )
    note = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Required to refuse or flag: the owner reads it.",
    )
    allow_partial = forms.BooleanField(
        required=False, label="Let this incomplete bundle onto the board (marked partial)"
    )


class SignUpForm(forms.Form):
    """A new account: user name, e-mail (for password resets) and a password, twice."""

    username = forms.RegexField(
        regex=r"^[\w.@+-]{3,150}$",
        max_length=150,
        help_text="3 to 150 letters, digits and @ . + - _",
        error_messages={"invalid": "expected 3 to 150 letters, digits and @ . + - _"},
    )
    email = forms.EmailField(help_text="For password resets only; never shown.")
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def clean_username(self) -> str:
        """The name in its display form (NFKC); refused if it is taken or looks like one."""
        from leaderboard.services.accounts import username_check
        from leaderboard.services.errors import FieldError

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
        from leaderboard.services.mail import email_confirmed

        return (user for user in super().get_users(email) if email_confirmed(user))

    def save(self, *args: Any, **kwargs: Any) -> None:
        from mirrorbench_site.client_ip import client_ip

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
        from leaderboard.services.mail import mail_allowed

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
