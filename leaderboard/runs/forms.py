"""Forms of runs: the hosted-evaluation form, the episode list's filters."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from evaluation.config import MAX_REPEATS
from evaluation.registry import provider_choices
from evaluation.vocabulary import (
    CONDITION_SUMMARIES,
    CONDITIONS,
    LEVEL_KEYS,
    LEVEL_SUMMARIES,
    LEVELS,
    MAIN_CONDITION,
    OUTCOMES,
    TRACK_KEYS,
    condition_label,
    level_label,
)
from leaderboard.boards.forms import model_facts_fields
from leaderboard.models import ModelEntry

CONDITION_CHOICES = [
    (name, f"{condition_label(name)}: {CONDITION_SUMMARIES[name]}") for name in CONDITIONS
]
"""The evaluate form's conditions, each with what it changes."""


class HostedEvaluationForm(forms.Form):
    """What a signed-in user with permission submits to evaluate an API model on the server."""

    SCENE_SETS = [
        ("all", "All 66 scenes"),
        ("human", "Human track (48)"),
        ("robot", "Robot track (18)"),
    ]

    provider = forms.ChoiceField(choices=provider_choices())
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
    release_date, reasoning, licence, scaffold = model_facts_fields()
    api_key = forms.CharField(
        # Never sent back to the browser, and no password manager's to fill in or keep.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        max_length=500,
        label="API key",
        help_text="Encrypted at rest and erased when the run ends.",
    )
    levels = forms.TypedMultipleChoiceField(
        choices=[
            (str(level), f"{level_label(level)}: {LEVEL_SUMMARIES[level]}") for level in LEVELS
        ],
        coerce=int,
        initial=list(LEVEL_KEYS),
        widget=forms.CheckboxSelectMultiple,
        help_text="The leaderboard ranks runs of all four levels on all 66 scenes.",
    )
    scenes = forms.ChoiceField(choices=SCENE_SETS, initial="all", widget=forms.RadioSelect)
    conditions = forms.MultipleChoiceField(
        choices=CONDITION_CHOICES,
        initial=[MAIN_CONDITION],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Main is the paper's protocol, the only condition the leaderboard ranks. A "
        "control plays the same episodes with one change, at the same cost as main (same "
        "prompts and budgets). Each condition chosen is a run of its own, all started together "
        "(none if one cannot start); a control run shows on the model's page and the mirror-use "
        "view, never in the leaderboard's tables. None chosen: main.",
    )
    repeats = forms.IntegerField(
        min_value=1,
        max_value=MAX_REPEATS,
        initial=1,
        required=False,
        help_text="Play every episode this many times, asking the model afresh each time: the "
        "board then shows how much its score moves between repeats. Each repeat costs as much "
        "as one run.",
    )
    private = forms.BooleanField(required=False, label="Keep this run private")

    def __init__(self, data: QueryDict | None = None, *args: Any, **kwargs: Any) -> None:
        if data is not None and "condition" in data and "conditions" not in data:
            # A form from before several conditions (one ``condition``): the same run.
            data = data.copy()
            data.setlist("conditions", data.getlist("condition"))
        super().__init__(data, *args, **kwargs)

    def clean_conditions(self) -> list[str]:
        """The conditions chosen in ``CONDITIONS`` order; main when none is."""
        chosen = self.cleaned_data.get("conditions") or [MAIN_CONDITION]
        return [c for c in CONDITIONS if c in chosen]


class RerunErroredForm(forms.Form):
    """A run's owner asks for its errored episodes to be played again."""

    api_key = forms.CharField(
        required=False,
        max_length=500,
        label="API key",
        help_text="a run's key is erased when it ends: hosted runs need it again",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )


class EpisodeListForm(forms.Form):
    """The GET parameters of a run's episode list: all optional."""

    level = forms.TypedChoiceField(
        choices=[("", "All levels"), *((key, level_label(key)) for key in LEVEL_KEYS)],
        coerce=int,
        empty_value=None,
        required=False,
    )
    track = forms.ChoiceField(choices=[("", "Both tracks"), *TRACK_KEYS.items()], required=False)
    outcome = forms.ChoiceField(
        choices=[("", "Any outcome"), *OUTCOMES.items()],
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
