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
