"""Forms of replays: which step to show."""

from __future__ import annotations

from django import forms
from django.core.validators import MaxValueValidator


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


class EpisodePairForm(forms.Form):
    """``?a=ID&b=ID`` of the side-by-side view, with ``step`` (0 is the start)."""

    a = forms.IntegerField(min_value=1, error_messages={"required": "the first episode's id"})
    b = forms.IntegerField(min_value=1, error_messages={"required": "the second episode's id"})
    step = forms.IntegerField(required=False, min_value=0)
