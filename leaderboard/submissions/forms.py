"""Forms of submissions: an upload's metadata and file, a moderator's review."""

from __future__ import annotations

from django import forms

from evaluation.registry import provider_choices
from leaderboard.boards.forms import model_facts_fields
from leaderboard.models import ModelEntry

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
    release_date, reasoning, licence, scaffold = model_facts_fields()
    reproduce_provider = forms.ChoiceField(
        choices=[("", "Do not re-run"), *provider_choices()],
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
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
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
    field_order = [
        "bundle",
        "model_name",
        "kind",
        "organisation",
        "params_b",
        "release_date",
        "reasoning",
        "licence",
        "scaffold",
        "link",
    ]


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
