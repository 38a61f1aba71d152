"""Validation of the browser episodes' inputs (``/play/``): what to start, each answer."""

from __future__ import annotations

from django import forms

from evaluation.vocabulary import LEVEL_KEYS, level_label
from leaderboard.play.selectors import SUBSETS
from simulation.catalogue import scene_set


class PlayStartForm(forms.Form):
    """A scene and a level to play; either left empty is drawn at random."""

    scene = forms.ChoiceField(required=False, choices=())
    level = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[("", "Random"), *((key, level_label(key)) for key in LEVEL_KEYS)],
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        scene_field = self.fields["scene"]
        assert isinstance(scene_field, forms.ChoiceField)
        scene_field.choices = [("", "Random"), *((s, s) for s in scene_set())]
        scene_field.error_messages["invalid_choice"] = (
            "expected a scene id of this benchmark (see /scenes/), got %(value)s"
        )


class PlayAnswerForm(forms.Form):
    """One answer: the step it is for (0-based) and the option (1 to 6)."""

    index = forms.IntegerField(min_value=0, max_value=1000)
    option = forms.IntegerField(
        min_value=1,
        max_value=6,
        error_messages={
            "min_value": "expected an option from 1 to 6",
            "max_value": "expected an option from 1 to 6",
        },
    )


class HumanSetForm(forms.Form):
    """Which Human set to submit."""

    subset = forms.ChoiceField(choices=list(SUBSETS.items()))
